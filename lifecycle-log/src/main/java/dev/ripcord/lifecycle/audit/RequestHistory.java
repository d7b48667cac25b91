package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * One request (one use of its ID) as the log tells it.
 *
 * @param requestId the request's ID
 * @param use       which use of the ID this is, from 1 (clients may reuse an ID once its request is over)
 * @param events    every event of it, in log order
 * @param partial   whether its events run into an edge of the audited range (in flight): the "missing" checks do
 *                  not judge it
 * @param jobs      its worker jobs, one per worker process (and choice)
 */
record RequestHistory(String requestId, int use, List<LifecycleEvent> events, boolean partial, List<Job> jobs) {

    RequestHistory {
        events = List.copyOf(events);
        jobs = List.copyOf(jobs);
    }

    /**
     * Whether the gateway marked this request as warm-up traffic ({@link LifecycleEvent#WARM_UP} on its
     * {@code ADMITTED}): checked against every invariant like any request, but not counted as the user's.
     */
    boolean warmUp() {
        return gateway(LifecycleEventType.ADMITTED).stream().anyMatch(e -> LifecycleEvent.WARM_UP.equals(e.detail()));
    }

    /** The gateway's events of one type (ADMITTED, ROUTED, FINISHED: the gateway's own types). */
    List<LifecycleEvent> gateway(LifecycleEventType type) {
        return events.stream().filter(e -> e.type() == type && History.GATEWAY.equals(e.service())).toList();
    }

    /** What a finding about this request appends to its message: which use of the ID, when not the first. */
    String note() {
        return use == 1 ? "" : " (use %d of this request ID)".formatted(use);
    }

    /** Its last few events: the evidence when something is missing. */
    List<LifecycleEvent> tail() {
        return events.subList(Math.max(0, events.size() - 3), events.size());
    }
}
