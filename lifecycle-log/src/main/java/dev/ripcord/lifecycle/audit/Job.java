package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * One worker process's part of one request: its events, in that process's sequence order (exact).
 *
 * @param requestId the ID the worker knows the job by (a choice of an {@code n > 1} request has its own)
 * @param process   the emitting process: instance and incarnation (see {@link History#process})
 * @param service   the worker's service
 * @param instance  the worker's instance
 * @param events    its events, by sequence number
 */
record Job(String requestId, String process, String service, String instance, List<LifecycleEvent> events) {

    Job {
        events = List.copyOf(events);
    }

    List<LifecycleEvent> of(LifecycleEventType type) {
        return events.stream().filter(e -> e.type() == type).toList();
    }

    LifecycleEvent first(LifecycleEventType type) {
        return events.stream().filter(e -> e.type() == type).findFirst().orElse(null);
    }

    boolean has(LifecycleEventType type) {
        return first(type) != null;
    }

    long firstSeq() {
        return events.getFirst().seq();
    }

    /** Its last few events: the evidence when something is missing. */
    List<LifecycleEvent> tail() {
        return events.subList(Math.max(0, events.size() - 3), events.size());
    }

    /** {@code service instance}, as findings name a job. */
    String who() {
        return service + " " + instance;
    }
}
