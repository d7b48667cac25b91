package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/** {@link Invariant#PAGES_FREED}: every page a job reserved is freed, once. */
final class PagesFreed extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent reserved = job.first("decode".equals(job.service()) ? LifecycleEventType.JOB_ADMITTED
                : LifecycleEventType.STARTED);
        List<LifecycleEvent> freed = job.of(LifecycleEventType.PAGES_FREED);
        if (freed.size() > 1) {
            found.add(Finding.broken(request.requestId(), Invariant.PAGES_FREED,
                    "%s freed the request's pages %d times".formatted(job.who(), freed.size()) + request.note(),
                    freed));
        }
        if (reserved != null && freed.isEmpty() && !request.partial()) {
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(reserved);
            evidence.addAll(job.tail());
            found.add(Finding.missing(request, job, Invariant.PAGES_FREED,
                    "%s reserved pages that were never freed".formatted(job.who()),
                    evidence.stream().distinct().sorted(History.BY_SEQ).toList()));
        }
    }
}
