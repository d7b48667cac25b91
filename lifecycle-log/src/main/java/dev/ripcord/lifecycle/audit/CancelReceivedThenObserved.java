package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#CANCEL_RECEIVED_THEN_OBSERVED}: a job that received its cancel ({@code CANCEL_RECEIVED}, emitted
 * where the worker's cancellation registry hands the cancel to the job, before the worker acts on it) while it had
 * not ended observes that cancel afterwards ({@code CANCEL_OBSERVED}, or its {@code ABORTED}). A worker that received
 * a cancel and then let the job run on to another end, or to none, broke it.
 *
 * <p>Judged by order within the one process that emitted both (sequence numbers), never by time. "Not ended" is
 * the job's own state as the receipt read it ({@code detail}: not {@code DONE}, {@code CANCELLED} or {@code FAILED})
 * and no end of the job logged before the receipt. A job that ends just as its cancel arrives cannot pass for a
 * violation: the worker observes every cancel its registry delivers, ended job or not, so the observation follows
 * the receipt whichever came first, and the check only asks that it follow. A missing observation is unverifiable
 * only when the process lost events after the receipt or died; a request in flight at an edge of the range is not
 * judged.
 */
final class CancelReceivedThenObserved extends JobCheck {

    private static final Set<String> ENDED_STATES = Set.of("DONE", "CANCELLED", "FAILED");

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        if (request.partial()) {
            return;
        }
        for (LifecycleEvent received : job.of(LifecycleEventType.CANCEL_RECEIVED)) {
            if (!liveAt(job, received) || observedAfter(job, received)) {
                continue;
            }
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(received);
            LifecycleEvent end = job.events().stream()
                    .filter(e -> e.seq() > received.seq() && e.type() == LifecycleEventType.JOB_FINISHED)
                    .findFirst().orElse(null);
            if (end != null) {
                evidence.add(end);
            }
            String ending = end == null ? "the job never ended"
                    : "the job ended %s (seq %d)".formatted(end.outcome(), end.seq());
            found.add(Finding.missing(request.requestId(), Invariant.CANCEL_RECEIVED_THEN_OBSERVED,
                    "%s received a cancel for %s (%s via %s, seq %d) while the job was %s, but never observed it: %s"
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

    private static boolean observedAfter(Job job, LifecycleEvent received) {
        return job.events().stream().anyMatch(e -> e.seq() > received.seq()
                && (e.type() == LifecycleEventType.CANCEL_OBSERVED || e.type() == LifecycleEventType.ABORTED));
    }
}
