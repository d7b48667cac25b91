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

    /**
     * True when no copy is inside the bracket, or the process inside it is gone (it has no mappings left). The
     * fence word names the writer by pid only; when that pid is the attached {@code sender}'s, the sender's start
     * time decides too, so a pid recycled by another process since the sender died is not taken for a live
     * writer. Any other pid (or no sender known) counts as live while a process has it: the safe direction.
     */
    boolean drained(PeerProcess sender);

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
        public boolean drained(PeerProcess sender) {
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
        public boolean drained(PeerProcess sender) {
            long pid = writer();
            if (pid == 0) {
                return true;
            }
            // A copy is inside the bracket. Only a process that is gone can be ignored: it has no mappings left.
            PeerProcess writer = sender != null && sender.pid() == pid ? sender : new PeerProcess(pid, 0);
            return writer.isGone();
        }

        @Override
        public void free() {
            slots.free(slot, generation);
        }
    }
}
