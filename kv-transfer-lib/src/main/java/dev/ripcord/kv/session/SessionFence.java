package dev.ripcord.kv.session;

import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.shm.PeerProcess;

/**
 * A receive session's fence: what proves that no write of the session can still land, on the receiver's side.
 * A session offered shared memory holds a slot of the agent's fence table ({@link Slot}); a TCP-only session has
 * {@link #NONE}, because every TCP byte lands through the session's own code, which stops by itself.
 * See docs/kv-transfer.md, "The fence word".
 */
public sealed interface SessionFence permits SessionFence.None, SessionFence.Slot {

    /** The fence of a session that is not offered shared memory. */
    SessionFence NONE = new None();

    /** True when a sender may attach over shared memory. */
    boolean offersSharedMemory();

    /** Sets FENCED: no sender copy can start any more (abort or verdict). Idempotent. */
    void close();

    /** The pid of the process inside the write bracket, 0 when none. */
    long writer();

    /** True when no copy is inside the bracket, or the process inside it is gone (it has no mappings left). */
    boolean drained();

    /** Gives the slot back (the session released). Once. */
    void free();

    /** No fence: TCP only. */
    record None() implements SessionFence {
        @Override
        public boolean offersSharedMemory() {
            return false;
        }

        @Override
        public void close() {
        }

        @Override
        public long writer() {
            return 0;
        }

        @Override
        public boolean drained() {
            return true;
        }

        @Override
        public void free() {
        }
    }

    /**
     * Slot {@code slot} of {@code table}, opened with {@code epoch}; allocation {@code generation} of
     * {@code slots}, freed back into it by identity (a second free is caught where it happens).
     */
    record Slot(FenceTable table, FenceSlots slots, int slot, long generation, long epoch) implements SessionFence {
        @Override
        public boolean offersSharedMemory() {
            return true;
        }

        @Override
        public void close() {
            table.fence(slot, epoch);
        }

        @Override
        public long writer() {
            return table.writer(slot);
        }

        @Override
        public boolean drained() {
            long pid = writer();
            // A copy is inside the bracket. Only a process that is gone can be ignored: it has no mappings left.
            return pid == 0 || new PeerProcess(pid, 0).isGone();
        }

        @Override
        public void free() {
            slots.free(slot, generation);
        }
    }
}
