package dev.ripcord.kv;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Process-wide ledger of everything the library holds: agents, regions and sessions of every agent in this JVM.
 * Each is entered when created and removed when released (exactly once), so a leak is a visible entry with a
 * description, not a guess. {@code dev.ripcord.kv.testing.KvLeakCheck} (in this
 * module's test-jar) fails a test class that leaves entries.
 */
public final class LiveResources {

    /** What a ledger entry is. */
    public enum Kind { AGENT, REGION, SESSION }

    /** One live resource; {@code id} is unique in this process. */
    public record Entry(long id, Kind kind, String description) {
    }

    private static final AtomicLong IDS = new AtomicLong();
    private static final Map<Long, Tracked> LIVE = new ConcurrentHashMap<>();

    private record Tracked(Kind kind, Supplier<String> describe) {
    }

    private LiveResources() {
    }

    /** Everything live now, oldest first. */
    public static List<Entry> snapshot() {
        List<Entry> out = new ArrayList<>();
        LIVE.forEach((id, t) -> out.add(new Entry(id, t.kind(), t.describe().get())));
        out.sort(Comparator.comparingLong(Entry::id));
        return out;
    }

    static long track(Kind kind, Supplier<String> describe) {
        long id = IDS.incrementAndGet();
        LIVE.put(id, new Tracked(kind, describe));
        return id;
    }

    static void untrack(long id) {
        if (LIVE.remove(id) == null) {
            throw new IllegalStateException("resource " + id + " released twice");
        }
    }
}
