package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#KV_SESSION_RELEASED_ONCE}: every KV session opened is released exactly once, after it drained. The
 * session events carry no session ID (kv-transfer-lib's listener reports the request and side), so a job's sessions
 * are counted: more releases than one, or fewer than its opens, break it.
 */
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
        if (opened.size() > released.size() && !request.partial()) {
            List<LifecycleEvent> evidence = new ArrayList<>(opened);
            evidence.addAll(released);
            evidence.addAll(job.tail());
            found.add(Finding.missing(request, job, Invariant.KV_SESSION_RELEASED_ONCE,
                    (released.isEmpty() ? "%s opened a KV session that was never released".formatted(job.who())
                            : "%s opened %d KV sessions and released %d".formatted(job.who(), opened.size(),
                                    released.size())),
                    evidence.stream().distinct().sorted(History.BY_SEQ).toList()));
        }
    }
}
