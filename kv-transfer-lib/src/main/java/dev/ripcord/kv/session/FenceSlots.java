package dev.ripcord.kv.session;

import java.util.ArrayDeque;
import java.util.BitSet;

/**
 * The receiving agent's allocator of fence-table slots: one per live shared-memory receive session. A freed slot
 * is handed out again before a fresh one (its word is reopened with epoch + 1 by {@code FenceTable.openSlot}, so a
 * stale sender of the old session can never write again). Thread-safe.
 */
public final class FenceSlots {
    private final int capacity;
    // guarded by this
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final BitSet held = new BitSet();
    private final long[] generations;
    private int fresh;
    private int doubleFrees;

    public FenceSlots(int capacity) {
        Checks.requireArgument(capacity >= 0, "%s fence slots", capacity);
        this.capacity = capacity;
        this.generations = new long[capacity];
    }

    public int capacity() {
        return capacity;
    }

    /** A slot for a new session: a recycled one first, else a fresh one; -1 when every slot is in use. */
    public synchronized int allocate() {
        Integer recycled = free.poll();
        int slot = recycled != null ? recycled : fresh < capacity ? fresh++ : -1;
        if (slot >= 0) {
            held.set(slot);
            generations[slot]++;
        }
        return slot;
    }

    /** How many times {@code slot} was handed out: with the slot, the identity of one allocation. */
    public synchronized long generation(int slot) {
        Checks.requireArgument(slot >= 0 && slot < fresh, "fence slot %s was never handed out", slot);
        return generations[slot];
    }

    /** Gives back the current allocation of {@code slot}. */
    synchronized void free(int slot) {
        Checks.requireArgument(slot >= 0 && slot < fresh, "fence slot %s was never handed out", slot);
        free(slot, generations[slot]);
    }

    /**
     * Gives back allocation {@code generation} of {@code slot}, once its session released (its writer left the
     * bracket or died). A second free of one allocation, or the free of an allocation the slot has moved past (it was
     * freed and handed to another session meanwhile), is recorded here, where it happens
     * ({@link LiveResources#violations()}), and ignored: the slot is never put in the free list twice, nor taken from
     * the session that holds it now.
     */
    public synchronized void free(int slot, long generation) {
        Checks.requireArgument(slot >= 0 && slot < fresh, "fence slot %s was never handed out", slot);
        if (!held.get(slot) || generations[slot] != generation) {
            doubleFrees++;
            LiveResources.doubleRelease("fence slot " + slot + " (allocation " + generation + ", now "
                    + generations[slot] + (held.get(slot) ? ", held" : ", free") + ")");
            return;
        }
        held.clear(slot);
        free.add(slot);
    }

    /** Slots held by sessions; with a consistency check that no slot was freed twice. */
    public synchronized int inUse() {
        Checks.requireState(doubleFrees == 0, "a fence slot was freed twice");
        return held.cardinality();
    }
}
