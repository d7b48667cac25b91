package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#NO_TOKEN_AFTER_CANCEL}: decode, having observed the cancel during step {@code s}, takes part in no
 * step after {@code s + 1}: it leaves the batch at step {@code s + 1} at the latest, and does not finish at or after
 * it. Judged on every job whose events carry steps, whatever its service is called; a CANCEL_OBSERVED without a step
 * followed by events with steps is itself a violation (nothing proves where the job stopped).
 */
final class NoTokenAfterCancel extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent observed = job.first(LifecycleEventType.CANCEL_OBSERVED);
        if (observed == null) {
            return;
        }
        if (observed.step() == null) {
            // A job that takes part in steps must say at which one it saw the cancel; without it nothing is proven.
            List<LifecycleEvent> stepped = job.events().stream()
                    .filter(e -> e.seq() > observed.seq() && e.step() != null).toList();
            if (!stepped.isEmpty()) {
                List<LifecycleEvent> evidence = new ArrayList<>();
                evidence.add(observed);
                evidence.addAll(stepped);
                found.add(Finding.broken(request.requestId(), Invariant.NO_TOKEN_AFTER_CANCEL,
                        "%s observed the cancel without its step, then took part in step %d".formatted(job.who(),
                                stepped.getLast().step()) + request.note(), evidence));
            }
            return;
        }
        long limit = observed.step() + 1;
        List<LifecycleEvent> late = job.events().stream().filter(e -> e.seq() > observed.seq() && e.step() != null
                && ((e.type() == LifecycleEventType.LEFT_BATCH && e.step() > limit)
                    || (e.type() == LifecycleEventType.JOB_FINISHED && e.step() >= limit))).toList();
        if (!late.isEmpty()) {
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(observed);
            evidence.addAll(late);
            LifecycleEvent last = late.getLast();
            long step = last.step() - (last.type() == LifecycleEventType.LEFT_BATCH ? 1 : 0);
            found.add(Finding.broken(request.requestId(), Invariant.NO_TOKEN_AFTER_CANCEL,
                    "%s observed the cancel at step %d but took part in step %d".formatted(job.who(),
                            observed.step(), step) + request.note(), evidence));
        }
    }
}
