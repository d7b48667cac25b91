package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;

/** {@link Invariant#NO_ABORT_AFTER_FINISH}: a job ends once: aborted, or finished, never both, never twice. */
final class NoAbortAfterFinish extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        List<LifecycleEvent> aborts = job.of(LifecycleEventType.ABORTED);
        List<LifecycleEvent> ends = job.of(LifecycleEventType.JOB_FINISHED);
        if (!aborts.isEmpty() && !ends.isEmpty()) {
            LifecycleEvent end = ends.getFirst();
            List<LifecycleEvent> pair = new ArrayList<>(ends);
            pair.addAll(aborts);
            pair.sort(History.BY_SEQ);
            boolean after = aborts.getLast().seq() > end.seq() && end.outcome() == LifecycleOutcome.COMPLETED;
            found.add(Finding.broken(request.requestId(), Invariant.NO_ABORT_AFTER_FINISH, (after
                    ? "%s aborted the job after it finished normally".formatted(job.who())
                    : "%s ended the job both aborted and %s".formatted(job.who(), end.outcome())) + request.note(),
                    pair));
        } else if (ends.size() > 1) {
            found.add(Finding.broken(request.requestId(), Invariant.NO_ABORT_AFTER_FINISH,
                    "%s ended the job %d times".formatted(job.who(), ends.size()) + request.note(), ends));
        }
    }
}
