package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/** {@link Invariant#KV_SESSION_RELEASED_ONCE}: every KV session opened is released exactly once, after it drained. */
final class KvSessionReleasedOnce extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        String id = request.requestId();
        List<LifecycleEvent> opened = job.of(LifecycleEventType.KV_OPENED);
        List<LifecycleEvent> released = job.of(LifecycleEventType.KV_RELEASED);
        LifecycleEvent drained = job.first(LifecycleEventType.KV_DRAINED);
        if (released.size() > 1) {
            found.add(Finding.broken(id, Invariant.KV_SESSION_RELEASED_ONCE, "%s released the KV session %d times"
                    .formatted(job.who(), released.size()) + request.note(), released));
        }
        if (!released.isEmpty() && (drained == null || drained.seq() > released.getFirst().seq())) {
            List<LifecycleEvent> evidence = new ArrayList<>(released.subList(0, 1));
            if (drained != null) {
                evidence.add(drained);
            }
            found.add(Finding.broken(id, Invariant.KV_SESSION_RELEASED_ONCE,
                    "%s released the KV session before it drained".formatted(job.who()) + request.note(), evidence));
        }
        if (!opened.isEmpty() && released.isEmpty() && !request.partial()) {
            List<LifecycleEvent> evidence = new ArrayList<>(opened);
            evidence.addAll(job.tail());
            found.add(Finding.missing(request, job, Invariant.KV_SESSION_RELEASED_ONCE,
                    "%s opened a KV session that was never released".formatted(job.who()),
                    evidence.stream().distinct().sorted(History.BY_SEQ).toList()));
        }
    }
}
