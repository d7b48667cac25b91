package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;

/**
 * One broken invariant.
 *
 * @param requestId the request it concerns
 * @param invariant which one
 * @param message   what is wrong, in a sentence
 * @param events    the events that break it (in log order), or the last ones seen when an event is missing
 */
public record Violation(String requestId, Invariant invariant, String message, List<LifecycleEvent> events) {

    public Violation {
        events = List.copyOf(events);
    }
}
