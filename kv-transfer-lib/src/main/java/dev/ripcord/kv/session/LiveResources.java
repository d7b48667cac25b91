package dev.ripcord.kv.session;

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

    /**
     * A resource released twice (or by someone who never held it), recorded where the second release happened:
     * {@code where} carries that stack. A counter cannot show this (a double free followed by a missing free reads
     * zero); identity can.
     */
    public record Violation(long id, String what, Throwable where) {
    }

    private static final AtomicLong IDS = new AtomicLong();
    private static final Map<Long, Violation> VIOLATIONS = new ConcurrentHashMap<>();
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

    public static long track(Kind kind, Supplier<String> describe) {
        long id = IDS.incrementAndGet();
        LIVE.put(id, new Tracked(kind, describe));
        return id;
    }

    /** Every double release recorded in this process and not yet taken, oldest first. */
    public static List<Violation> violations() {
        List<Violation> out = new ArrayList<>(VIOLATIONS.values());
        out.sort(Comparator.comparingLong(Violation::id));
        return out;
    }

    /** Records a double release of {@code what}, here; returns the exception a caller that must refuse throws. */
    public static IllegalStateException doubleRelease(String what) {
        IllegalStateException e = new IllegalStateException(what + " released twice");
        long id = IDS.incrementAndGet();
        VIOLATIONS.put(id, new Violation(id, what, e));
        return e;
    }

    /** Removes and returns the recorded violations whose description contains {@code what} (a test that plants one). */
    public static List<Violation> takeViolations(String what) {
        List<Violation> out = violations().stream().filter(v -> v.what().contains(what)).toList();
        out.forEach(v -> VIOLATIONS.remove(v.id()));
        return out;
    }

    public static void untrack(long id) {
        if (LIVE.remove(id) == null) {
            throw doubleRelease("resource " + id);
        }
    }
}
