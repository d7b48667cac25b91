package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#CACHE_REFERENCES_DROPPED}: a prefill job that took pages from the prefix cache
 * ({@code PREFIX_HIT pages}) drops a reference to each of them when it is freed: its {@code PAGES_FREED} counts at
 * least as many references as it hit. (That it frees once is {@link PagesFreed}'s; that a page leaves the free list
 * only when nobody holds it, the engine's pool enforces where it happens: a free of a page no request holds throws.)
 */
final class CacheReferencesDropped extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent hit = job.first(LifecycleEventType.PREFIX_HIT);
        LifecycleEvent freed = job.first(LifecycleEventType.PAGES_FREED);
        if (hit != null && hit.pages() != null && freed != null && freed.pages() != null
                && freed.pages() < hit.pages()) {
            found.add(Finding.broken(request.requestId(), Invariant.CACHE_REFERENCES_DROPPED,
                    "%s took %d pages from the prefix cache but dropped %d references".formatted(job.who(),
                            hit.pages(), freed.pages()) + request.note(), List.of(hit, freed)));
        }
    }
}
