package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#HIT_ONLY_CACHED_PAGES}: replays each prefill process's prefix cache from its events, in its
 * sequence order: {@code PAGES_CACHED} adds keys, {@code PAGES_EVICTED} removes them, {@code PREFIX_CACHE_CLEARED}
 * empties it; each {@code PREFIX_HIT} must name a key that is in it then (cached, hence complete, and not evicted
 * since). Keys are chained, so the last page's key stands for the whole prefix. Judged only for a process whose
 * events the range holds from its first one, without loss: otherwise what it cached before is unknown.
 */
final class HitOnlyCachedPages implements InvariantCheck {

    @Override
    public List<Finding> check(History history) {
        Map<String, List<LifecycleEvent>> byProcess = new LinkedHashMap<>();
        for (LifecycleEvent e : history.log()) {
            if (isCacheEvent(e.type())) {
                byProcess.computeIfAbsent(History.process(e), p -> new ArrayList<>()).add(e);
            }
        }
        Set<String> lossy = new HashSet<>();
        history.losses().forEach(loss -> lossy.add(loss.process()));
        List<Finding> found = new ArrayList<>();
        byProcess.forEach((process, events) -> {
            if (!lossy.contains(process) && startsAtTheProcessStart(history, process)) {
                replay(events.stream().sorted(History.BY_SEQ).toList(), found);
            }
        });
        return found;
    }

    private static boolean isCacheEvent(LifecycleEventType type) {
        return type == LifecycleEventType.PAGES_CACHED || type == LifecycleEventType.PAGES_EVICTED
                || type == LifecycleEventType.PREFIX_CACHE_CLEARED || type == LifecycleEventType.PREFIX_HIT;
    }

    /** Whether the range holds the process's first event (sequence numbers start at 1 in every process). */
    private static boolean startsAtTheProcessStart(History history, String process) {
        return history.log().stream().filter(e -> History.process(e).equals(process))
                .anyMatch(e -> e.seq() == 1);
    }

    private static void replay(List<LifecycleEvent> events, List<Finding> found) {
        Set<String> cached = new HashSet<>();
        for (LifecycleEvent e : events) {
            switch (e.type()) {
                case PAGES_CACHED -> cached.addAll(keys(e));
                case PAGES_EVICTED -> keys(e).forEach(cached::remove);
                case PREFIX_CACHE_CLEARED -> cached.clear();
                case PREFIX_HIT -> {
                    if (e.detail() != null && !cached.contains(e.detail())) {
                        found.add(Finding.broken(e.requestId(), Invariant.HIT_ONLY_CACHED_PAGES,
                                "%s %s took page %s from its prefix cache, which did not hold it then (never cached, "
                                        .formatted(e.service(), e.instance(), e.detail())
                                        + "or evicted or cleared since)", List.of(e)));
                    }
                }
                default -> {
                }
            }
        }
    }

    private static List<String> keys(LifecycleEvent e) {
        return e.detail() == null || e.detail().isBlank() ? List.of() : List.of(e.detail().trim().split(" +"));
    }
}
