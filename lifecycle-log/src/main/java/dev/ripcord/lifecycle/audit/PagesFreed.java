package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#PAGES_FREED}: every page a job reserved is freed, once. The reservation is the job's first
 * JOB_ADMITTED or STARTED; when it says how many pages ({@code pages}) and PAGES_FREED says how many the engine's pool
 * took back, the pool must have taken back at least as many (a decode job grows by pages as it generates, which the
 * log does not record, so more is allowed; fewer is a page kept back).
 */
final class PagesFreed extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent reserved = job.events().stream().filter(e -> e.type() == LifecycleEventType.JOB_ADMITTED
                || e.type() == LifecycleEventType.STARTED).findFirst().orElse(null);
        List<LifecycleEvent> freed = job.of(LifecycleEventType.PAGES_FREED);
        if (reserved != null && reserved.pages() != null && freed.size() == 1 && freed.getFirst().pages() != null
                && freed.getFirst().pages() < reserved.pages()) {
            found.add(Finding.broken(request.requestId(), Invariant.PAGES_FREED,
                    "%s reserved %d pages but the pool took back %d".formatted(job.who(), reserved.pages(),
                            freed.getFirst().pages()) + request.note(), List.of(reserved, freed.getFirst())));
        }
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
