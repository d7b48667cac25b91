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
 * @param process   for a missing event, the process (instance, {@code @} and incarnation) that should have logged it,
 *                  when known; null otherwise. A reader that excuses an unverifiable item by a fault it injected
 *                  matches the fault's target against this, never against the message
 */
public record Violation(String requestId, Invariant invariant, String message, List<LifecycleEvent> events,
                        String process) {

    public Violation {
        events = List.copyOf(events);
    }

    public Violation(String requestId, Invariant invariant, String message, List<LifecycleEvent> events) {
        this(requestId, invariant, message, events, null);
    }

    /** The instance part of {@link #process}, or null. */
    public String instance() {
        if (process == null) {
            return null;
        }
        int at = process.indexOf('@');
        return at < 0 ? process : process.substring(0, at);
    }
}
