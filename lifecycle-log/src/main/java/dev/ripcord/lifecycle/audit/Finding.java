package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;

/**
 * What one {@link InvariantCheck} found about one request: an invariant broken by events the log holds
 * ({@link #missing} false), or an event that should be there and is not ({@link #missing} true). The auditor turns a
 * missing event into a violation unless a loss or a crash of the log explains it ({@link Excuses}).
 *
 * @param requestId the request
 * @param invariant which invariant
 * @param message   what is wrong, in a sentence
 * @param events    the events that break it, or the last ones seen when an event is missing
 * @param missing   whether an expected event is absent (rather than a wrong one present)
 * @param instance  the instance that should have emitted the missing event (null: the request's gateway)
 * @param process   that instance's process (instance and incarnation), when known
 * @param afterSeq  the sequence number on {@code process} after which the missing event would have been emitted (the
 *                  job's first event, the request's ADMITTED): only a loss after it may explain the absence
 */
record Finding(String requestId, Invariant invariant, String message, List<LifecycleEvent> events, boolean missing,
               String instance, String process, long afterSeq) {

    Finding {
        events = List.copyOf(events);
    }

    static Finding broken(String requestId, Invariant invariant, String message, List<LifecycleEvent> events) {
        return new Finding(requestId, invariant, message, events, false, null, null, 0);
    }

    static Finding missing(String requestId, Invariant invariant, String message, List<LifecycleEvent> events,
                           String instance, String process, long afterSeq) {
        return new Finding(requestId, invariant, message, events, true, instance, process, afterSeq);
    }

    /** An event {@code job} should have logged and did not. */
    static Finding missing(RequestHistory request, Job job, Invariant invariant, String message,
                           List<LifecycleEvent> events) {
        return missing(request.requestId(), invariant, message + request.note(), events, job.instance(),
                job.process(), job.firstSeq());
    }

    Violation violation(String suffix) {
        return new Violation(requestId, invariant, message + suffix, events, process);
    }
}
