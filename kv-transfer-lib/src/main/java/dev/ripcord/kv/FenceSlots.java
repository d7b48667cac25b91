package dev.ripcord.kv;

import java.util.ArrayDeque;
import java.util.HashSet;

/**
 * The receiving agent's allocator of fence-table slots: one per live shared-memory receive session. A freed slot
 * is handed out again before a fresh one (its word is reopened with epoch + 1 by {@code FenceTable.openSlot}, so a
 * stale sender of the old session can never write again). Thread-safe.
 */
final class FenceSlots {
    private final int capacity;
    // guarded by this
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private int fresh;

    FenceSlots(int capacity) {
        Checks.requireArgument(capacity >= 0, "%s fence slots", capacity);
        this.capacity = capacity;
    }

    int capacity() {
        return capacity;
    }

    /** A slot for a new session: a recycled one first, else a fresh one; -1 when every slot is in use. */
    synchronized int allocate() {
        Integer recycled = free.poll();
        if (recycled != null) {
            return recycled;
        }
        return fresh < capacity ? fresh++ : -1;
    }

    /** Gives a slot back, once its session released (its writer left the bracket or died). */
    synchronized void free(int slot) {
        Checks.requireArgument(slot >= 0 && slot < fresh, "fence slot %s was never handed out", slot);
        free.add(slot);
    }

    /** Slots held by sessions; with a consistency check that no slot was freed twice. */
    synchronized int inUse() {
        Checks.requireState(new HashSet<>(free).size() == free.size(), "a fence slot was freed twice");
        return fresh - free.size();
    }
}
