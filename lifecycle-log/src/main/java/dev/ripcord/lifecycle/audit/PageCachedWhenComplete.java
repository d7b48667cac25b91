package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#PAGE_CACHED_WHEN_COMPLETE}: a prefill job's {@code PAGES_CACHED} names a chunk that completed
 * before it ({@code CHUNK_DONE} of that chunk, earlier in the job's sequence), and the positions its cached pages
 * hold ({@code tokens}) are no more than the job had computed or taken from the cache by then. A chunk a cancel
 * stopped has no {@code CHUNK_DONE}, so a page it wrote caches nothing. Judged only for jobs whose {@code STARTED}
 * is in the audited range: the count runs from the job's start.
 */
final class PageCachedWhenComplete extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        if (job.first(LifecycleEventType.STARTED) == null) {
            // The job started before the audited range (a request in flight when it opened): its earlier chunks are
            // outside it, and what it had computed by a PAGES_CACHED cannot be counted. Judged in a range that
            // holds its start.
            return;
        }
        LifecycleEvent hit = job.first(LifecycleEventType.PREFIX_HIT);
        int fromCache = hit == null || hit.tokens() == null ? 0 : hit.tokens();
        for (LifecycleEvent cached : job.of(LifecycleEventType.PAGES_CACHED)) {
            Integer chunk = cached.chunk();
            List<LifecycleEvent> done = job.events().stream().filter(e -> e.type() == LifecycleEventType.CHUNK_DONE
                    && e.seq() < cached.seq() && e.chunk() != null && chunk != null && e.chunk() <= chunk).toList();
            boolean completed = done.stream().anyMatch(e -> e.chunk().equals(chunk));
            int computed = fromCache + done.stream().mapToInt(e -> e.tokens() == null ? 0 : e.tokens()).sum();
            if (!completed) {
                found.add(Finding.broken(request.requestId(), Invariant.PAGE_CACHED_WHEN_COMPLETE,
                        "%s cached pages for chunk %s, which had not completed".formatted(job.who(), chunk)
                                + request.note(), List.of(cached)));
            } else if (cached.tokens() != null && cached.tokens() > computed) {
                found.add(Finding.broken(request.requestId(), Invariant.PAGE_CACHED_WHEN_COMPLETE,
                        "%s cached pages holding %d positions when only %d were complete".formatted(job.who(),
                                cached.tokens(), computed) + request.note(), List.of(cached)));
            }
        }
    }
}
