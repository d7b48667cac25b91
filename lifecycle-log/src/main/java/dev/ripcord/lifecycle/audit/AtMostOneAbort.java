package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/** {@link Invariant#AT_MOST_ONE_ABORT}: a worker job is aborted at most once. */
final class AtMostOneAbort extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        List<LifecycleEvent> aborts = job.of(LifecycleEventType.ABORTED);
        if (aborts.size() > 1) {
            found.add(Finding.broken(request.requestId(), Invariant.AT_MOST_ONE_ABORT,
                    "%s aborted the request %d times".formatted(job.who(), aborts.size()) + request.note(), aborts));
        }
    }
}
