package dev.ripcord.lifecycle.audit;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#CANCEL_OBSERVED_OR_FINISHED}: when a cancel was published for a job's ID (the cancellations topic
 * of the range), the job either observed it (CANCEL_OBSERVED) or had ended (JOB_FINISHED or ABORTED): a cancel that a
 * worker never sees and a job that then never ends is what this catches. Jobs of requests in flight are not judged.
 */
final class CancelObservedOrFinished implements InvariantCheck {

    @Override
    public List<Finding> check(History history) {
        Set<String> cancelled = new HashSet<>();
        history.cancels().stream().map(CancelEvent::requestId).forEach(cancelled::add);
        return history.requests().stream().filter(r -> !r.partial())
                .flatMap(r -> r.jobs().stream().filter(job -> cancelled.contains(job.requestId()))
                        .filter(job -> !job.has(LifecycleEventType.CANCEL_OBSERVED)
                                && !job.has(LifecycleEventType.JOB_FINISHED) && !job.has(LifecycleEventType.ABORTED))
                        .map(job -> Finding.missing(r, job, Invariant.CANCEL_OBSERVED_OR_FINISHED,
                                "a cancel was published for %s, but %s neither observed it nor ended the job"
                                        .formatted(job.requestId(), job.who()), job.tail())))
                .toList();
    }
}
