package dev.ripcord.kv.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Per-session fence words in a file both processes map: the single source of truth for "may a shared-memory write
 * into this transfer session's pages still start, or still be running, and by whom".
 *
 * <p>Design note. With the shared-memory backend the sender copies straight into the receiver's pages, so the
 * receiver cannot simply stop landing bytes the way the TCP path does; it must know that no copy of the sender is
 * running and that none can start. Each session owns one slot; its 64-bit word is
 * {@code epoch (40 bits) | FENCED (1) | WRITING (1) | writer pid (22)}.
 * <ul>
 *   <li>The receiver opens a slot with a fresh epoch, not fenced, not writing, and puts slot and epoch in the
 *   descriptor.</li>
 *   <li>Before each piece (at most one piece size long) the sender CASes in WRITING and its pid, only if the word
 *   still has its epoch and neither FENCED nor WRITING; after the piece it CASes WRITING out. A write is bracketed
 *   by the flag, and the word names the process inside the bracket.</li>
 *   <li>To abort or complete, the receiver CASes FENCED in. From then on no bracket can open, and the receiver
 *   waits until WRITING is clear, or until the process the word names is gone (a dead process has no mappings,
 *   so it writes nothing more).</li>
 *   <li>Only then is the session released and its slot reopened, with epoch + 1, for a later session: a stale
 *   sender still holding the old epoch can never open a bracket again, and nobody was inside one when the pages
 *   were handed back.</li>
 * </ul>
 * Because the writer's pid is set in the same CAS that opens the bracket, the receiver never has to learn it any
 * other way (no round trip before the first copy), and it can never name the wrong process: only a shared-memory
 * peer in the same pid namespace is ever used (see {@link HostIdentity}), and Linux pids fit in 22 bits. CAS and
 * volatile access on a shared mapping are atomic across processes on the hardware the JDK supports. Slots are 64
 * bytes apart so sessions do not share a cache line.
 *
 * <p>Internal: not part of the library's API.
 */
public final class FenceTable implements AutoCloseable {
    static final int HEADER_BYTES = 4096;
    static final int SLOT_STRIDE = 64;
    private static final long MAGIC = 0x524B5646454E4345L; // "RKVFENCE"
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int EPOCH_SHIFT = 24;
    private static final long FENCED = 1L << 23;
    private static final long WRITING = 1L << 22;
    private static final long PID = WRITING - 1;
    private static final long EPOCH_MASK = (1L << 40) - 1;

    /** Outcome of {@link #tryBeginWrite}. */
    public enum Begin {
        /** Inside the bracket: copy, then {@link #endWrite}. */
        WRITING,
        /** The session was fenced or the slot moved to a later epoch: never write again. */
        FENCED,
        /** Another writer is inside the bracket: try again. */
        BUSY
    }

    private final Path path;
    private final Arena arena;
    private final MemorySegment memory;
    private final int slots;
    private final boolean owner;

    private FenceTable(Path path, Arena arena, MemorySegment memory, int slots, boolean owner) {
        this.path = path;
        this.arena = arena;
        this.memory = memory;
        this.slots = slots;
        this.owner = owner;
    }

    /** Creates the table file (receiver side); it is deleted by {@link #close()}. */
    public static FenceTable create(Path path, long incarnation, int slots) throws IOException {
        long bytes = HEADER_BYTES + (long) slots * SLOT_STRIDE;
        Arena arena = Arena.ofShared();
        try (FileChannel ch = ShmFiles.createOwnerOnly(path)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            m.set(ValueLayout.JAVA_LONG, 8, incarnation);
            m.set(ValueLayout.JAVA_LONG, 16, slots);
            LONG.setVolatile(m, 0L, MAGIC); // last: a mapper that sees the magic sees the rest
            return new FenceTable(path, arena, m, slots, true);
        } catch (IOException | RuntimeException e) {
            arena.close();
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /**
     * Maps an existing table (sender side) and checks that it belongs to the expected agent incarnation.
     * {@code named} comes from a peer: it is opened only as {@link ShmFiles#openNamed} allows, and the slot count in
     * its header must fit the file.
     *
     * @throws RefusedShmFileException the file may not be opened, or its slot count does not fit; nothing mapped
     * @throws IOException             it belongs to another incarnation, or cannot be read
     */
    public static FenceTable open(Path dir, String named, long expectedIncarnation) throws IOException {
        try (FileChannel ch = ShmFiles.openNamed(dir, named, ShmFiles.FENCE_SUFFIX)) {
            long size = ch.size();
            if (size < HEADER_BYTES) {
                throw new IOException(named + " is not a fence table");
            }
            ByteBuffer header = ByteBuffer.allocate(24).order(ByteOrder.nativeOrder());
            while (header.hasRemaining() && ch.read(header, header.position()) > 0) {
                // read the fixed fields before mapping anything
            }
            long slots = header.getLong(16);
            if (header.getLong(0) != MAGIC || header.getLong(8) != expectedIncarnation) {
                throw new IOException(named + " belongs to another agent incarnation");
            }
            if (slots <= 0 || slots > (size - HEADER_BYTES) / SLOT_STRIDE || slots > Integer.MAX_VALUE) {
                throw new RefusedShmFileException(named, "its header claims " + slots + " slots in a file of " + size);
            }
            Arena arena = Arena.ofShared();
            try {
                MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + slots * SLOT_STRIDE, arena);
                return new FenceTable(Path.of(named), arena, m, (int) slots, false);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
        }
    }

    public Path path() {
        return path;
    }

    public int slots() {
        return slots;
    }

    /** Receiver: starts a new session in a free slot; returns its epoch. */
    public long openSlot(int slot) {
        long off = offset(slot);
        long w = (long) LONG.getVolatile(memory, off);
        long epoch = ((w >>> EPOCH_SHIFT) + 1) & EPOCH_MASK;
        if (epoch == 0) {
            epoch = 1; // wrapped after 2^40 sessions in one slot; 0 is never handed out
        }
        LONG.setVolatile(memory, off, epoch << EPOCH_SHIFT);
        return epoch;
    }

    /** Sender: tries to enter the write bracket as process {@code pid}. */
    public Begin tryBeginWrite(int slot, long epoch, long pid) {
        if (pid <= 0 || pid > PID) {
            throw new IllegalArgumentException("pid " + pid + " does not fit the fence word");
        }
        long off = offset(slot);
        while (true) {
            long w = (long) LONG.getVolatile(memory, off);
            if ((w >>> EPOCH_SHIFT) != epoch || (w & FENCED) != 0) {
                return Begin.FENCED;
            }
            if ((w & WRITING) != 0) {
                return Begin.BUSY;
            }
            if (LONG.compareAndSet(memory, off, w, (w & ~PID) | WRITING | pid)) {
                return Begin.WRITING;
            }
        }
    }

    /** Sender: leaves the bracket entered by a successful {@link #tryBeginWrite} (FENCED may have been set since). */
    public void endWrite(int slot) {
        long off = offset(slot);
        while (true) {
            long w = (long) LONG.getVolatile(memory, off);
            if ((w & WRITING) == 0) {
                throw new IllegalStateException("fence slot " + slot + ": endWrite without beginWrite");
            }
            if (LONG.compareAndSet(memory, off, w, w & ~WRITING)) {
                return;
            }
        }
    }

    /** Receiver: forbids further brackets in this epoch; returns the pid inside one now, or 0. */
    public long fence(int slot, long epoch) {
        long off = offset(slot);
        while (true) {
            long w = (long) LONG.getVolatile(memory, off);
            if ((w >>> EPOCH_SHIFT) != epoch) {
                throw new IllegalStateException("fence slot " + slot + " is at epoch " + (w >>> EPOCH_SHIFT)
                        + ", not " + epoch);
            }
            if ((w & FENCED) != 0 || LONG.compareAndSet(memory, off, w, w | FENCED)) {
                return writer(w);
            }
        }
    }

    /** The pid of the process inside the bracket right now, or 0 when nobody writes. */
    public long writer(int slot) {
        return writer((long) LONG.getVolatile(memory, offset(slot)));
    }

    boolean isFenced(int slot) {
        return ((long) LONG.getVolatile(memory, offset(slot)) & FENCED) != 0;
    }

    private static long writer(long word) {
        return (word & WRITING) != 0 ? word & PID : 0;
    }

    private long offset(int slot) {
        if (slot < 0 || slot >= slots) {
            throw new IndexOutOfBoundsException("fence slot " + slot + " of " + slots);
        }
        return HEADER_BYTES + (long) slot * SLOT_STRIDE;
    }

    /** Unmaps; the owner also deletes the file. */
    @Override
    public void close() {
        arena.close();
        if (owner) {
            ShmFiles.deleteQuietly(path);
        }
    }
}
