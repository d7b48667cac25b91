package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#CANCEL_RECEIVED_THEN_OBSERVED}: a job that received its cancel ({@code CANCEL_RECEIVED}, emitted
 * where the worker's cancellation registry hands the cancel to the job, before the worker acts on it) while it had
 * not ended observes that cancel ({@code CANCEL_OBSERVED}) after the receipt and before any other end of the job
 * ({@code JOB_FINISHED}). A worker that received a cancel and then let the job run on to another end, or to none,
 * broke it.
 *
 * <p>Judged by order within the one process that emitted both (sequence numbers), never by time. "Not ended" is
 * the job's own state as the receipt read it ({@code detail}: not {@code DONE}, {@code CANCELLED} or {@code FAILED})
 * and no end of the job logged before the receipt. The worker logs the receipt and the observation in one section
 * under its journal's lock, where every end of a job is published right after the CAS that decided it, so a job
 * that ends just as its cancel arrives ends before the receipt (which says so) or after the observation: nothing
 * legitimate puts an end between them. A job whose end is in the log is judged even when its request is in flight
 * at an edge of the range (its evidence is complete); one with no end and no observation after its receipt is not.
 * A missing observation is unverifiable only when the process lost events after the receipt, or died.
 */
final class CancelReceivedThenObserved extends JobCheck {

    private static final Set<String> ENDED_STATES = Set.of("DONE", "CANCELLED", "FAILED");

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        for (LifecycleEvent received : job.of(LifecycleEventType.CANCEL_RECEIVED)) {
            if (!liveAt(job, received)) {
                continue;
            }
            LifecycleEvent end = job.events().stream()
                    .filter(e -> e.seq() > received.seq() && e.type() == LifecycleEventType.JOB_FINISHED)
                    .findFirst().orElse(null);
            long before = end == null ? Long.MAX_VALUE : end.seq();
            boolean observed = job.events().stream().anyMatch(e -> e.seq() > received.seq() && e.seq() < before
                    && (e.type() == LifecycleEventType.CANCEL_OBSERVED || e.type() == LifecycleEventType.ABORTED));
            if (observed || (end == null && request.partial())) {
                continue;
            }
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(received);
            if (end != null) {
                evidence.add(end);
            }
            String ending = end == null ? "the job never ended"
                    : "the job ended %s (seq %d) without it".formatted(end.outcome(), end.seq());
            found.add(Finding.missing(request.requestId(), Invariant.CANCEL_RECEIVED_THEN_OBSERVED,
                    "%s received a cancel for %s (%s via %s, seq %d) while the job was %s, but did not observe it: %s"
                            .formatted(job.who(), job.requestId(), received.reason(), received.source(),
                                    received.seq(), received.detail() == null ? "not ended" : received.detail(),
                                    ending) + request.note(),
                    evidence, job.instance(), job.process(), received.seq()));
        }
    }

    /** Whether the job had not ended when it received the cancel: by its state then, and by its events before. */
    private static boolean liveAt(Job job, LifecycleEvent received) {
        if (received.detail() != null && ENDED_STATES.contains(received.detail())) {
            return false;
        }
        return job.events().stream().noneMatch(e -> e.seq() < received.seq()
                && (e.type() == LifecycleEventType.JOB_FINISHED || e.type() == LifecycleEventType.ABORTED));
    }
}
