package dev.ripcord.worker;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.protocol.JournalEntry;

/**
 * A bounded, ordered record of what a worker's scheduler did to which request (the last {@code capacity} events).
 *
 * <p>Why: the cancellation contract is about orderings ("at most one chunk after the cancel was observed", "the
 * next request started before any further chunk"). A journal with gap-free sequence numbers lets tests and
 * operators check those orderings exactly, where timestamps would only suggest them. Appends are cheap (one
 * synchronized array write per chunk or token), far below the cost of the work they record.
 */
public final class SchedulerJournal {

    private final JournalEntry[] ring;
    private long next = 1;
    private volatile java.util.function.Consumer<JournalEntry> listener = entry -> { };

    public SchedulerJournal(int capacity) {
        this.ring = new JournalEntry[capacity];
    }

    public void record(String requestId, String event, Object detail) {
        record(requestId, event, detail, null);
    }

    /**
     * Records an entry and runs {@code alongside} (if any) under the journal's lock, right after: the lifecycle log
     * publishes there, so that its per-instance order is the journal's order exactly. {@code alongside} must be
     * quick and must not block (a non-blocking queue offer).
     */
    public void record(String requestId, String event, Object detail, Runnable alongside) {
        JournalEntry entry;
        synchronized (this) {
            long seq = next++;
            entry = new JournalEntry(seq, requestId, event, detail == null ? "" : detail.toString(),
                    JournalEntry.nowMicros());
            ring[(int) (seq % ring.length)] = entry;
            if (alongside != null) {
                alongside.run();
            }
        }
        listener.accept(entry);
    }

    /**
     * Runs {@code section} under the journal's lock and returns what it returns, recording no entry itself: for
     * lifecycle events that must take their place in the journal's order (one that mirrors no entry, published with
     * the entries {@code section} records through {@link #record}, which may be called inside: the lock is
     * reentrant). Quick and non-blocking, as for {@link #record}'s {@code alongside}.
     */
    public <T> T inOrder(java.util.function.Supplier<T> section) {
        synchronized (this) {
            return section.get();
        }
    }

    /**
     * Calls {@code listener} with every entry after it is recorded, on the recording thread, outside the journal's
     * lock. For in-process tests that must act at an exact point of a scheduler's work (a cancel that lands while a
     * chunk is computing is one that arrives when the chunk is journalled: nothing of the job has looked since).
     */
    public void onRecord(java.util.function.Consumer<JournalEntry> listener) {
        this.listener = listener == null ? entry -> { } : listener;
    }

    /** The entries with {@code seq > after} still held, oldest first. */
    public synchronized List<JournalEntry> since(long after) {
        long first = Math.max(after + 1, Math.max(1, next - ring.length));
        List<JournalEntry> out = new ArrayList<>((int) Math.max(0, next - first));
        for (long seq = first; seq < next; seq++) {
            out.add(ring[(int) (seq % ring.length)]);
        }
        return out;
    }
}
