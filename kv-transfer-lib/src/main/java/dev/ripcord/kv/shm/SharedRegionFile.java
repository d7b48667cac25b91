package dev.ripcord.kv.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A memory region backed by a file (normally on tmpfs, {@code /dev/shm}) that the receiver owns and a same-host
 * sender maps to write into directly. Layout: a 4 KiB header (magic, agent incarnation, region id, data bytes),
 * then the data, page aligned. The mapping has its own shared {@link Arena}, closed exactly once by {@link #close()}.
 *
 * <p>Internal: not part of the library's API.
 */
public final class SharedRegionFile implements AutoCloseable {
    static final int HEADER_BYTES = 4096;
    private static final long MAGIC = 0x524B565245474E31L; // "RKVREGN1"

    private final Path path;
    private final Arena arena;
    private final MemorySegment data;
    private final boolean owner;

    private SharedRegionFile(Path path, Arena arena, MemorySegment data, boolean owner) {
        this.path = path;
        this.arena = arena;
        this.data = data;
        this.owner = owner;
    }

    /** Creates and maps a new region file of {@code bytes} data bytes (receiver side). */
    public static SharedRegionFile create(Path path, long incarnation, long regionId, long bytes)
            throws IOException {
        if (bytes <= 0 || bytes > Long.MAX_VALUE - HEADER_BYTES) {
            throw new IllegalArgumentException("region of " + bytes + " bytes");
        }
        long usable = Files.getFileStore(path.getParent()).getUsableSpace();
        if (usable - HEADER_BYTES < bytes) {
            // tmpfs pages are allocated on first touch; a full tmpfs would SIGBUS the copy, so refuse up front.
            throw new IOException(path.getParent() + " has " + usable + " usable bytes, region needs " + bytes);
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = ShmFiles.createOwnerOnly(path)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + bytes, arena);
            m.set(ValueLayout.JAVA_LONG, 8, incarnation);
            m.set(ValueLayout.JAVA_LONG, 16, regionId);
            m.set(ValueLayout.JAVA_LONG, 24, bytes);
            m.set(ValueLayout.JAVA_LONG, 0, MAGIC);
            MemorySegment data = nativeView(m, bytes, arena);
            // Every page allocated now, once, rather than by the first transfer that writes it: tmpfs allocates and
            // zeroes a page at its first touch, and a sender's copy into untouched pages ran at about a third of
            // memcpy (docs/benchmarks.md, "KV transfer in the running services").
            data.fill((byte) 0);
            return new SharedRegionFile(path, arena, data, true);
        } catch (IOException | RuntimeException e) {
            arena.close();
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /**
     * The data after the header of mapping {@code m}, as a native segment of {@code arena}: the same pages, the same
     * lifetime (closing the arena unmaps them and makes the view unusable). A mapped segment is another class than the
     * engine's own native segments, and the engine's kernels, which read KV pages and weights and scratch at the same
     * call sites, compile to slower code when they see both: measured on stories15M, one compute thread, a KV pool in a
     * mapped segment made prefill of 20 tokens about 35 % and a decode step about 25 % slower than the same pool seen
     * as a native segment.
     */
    private static MemorySegment nativeView(MemorySegment m, long bytes, Arena arena) {
        return MemorySegment.ofAddress(m.address() + HEADER_BYTES).reinterpret(bytes, arena, null);
    }

    /**
     * Maps an existing region file (sender side) after checking it is the region the descriptor names. {@code named}
     * comes from a peer: it is opened only if it is a Ripcord region file directly inside {@code dir}, not a link, a
     * regular file owned by this user (see {@link ShmFiles#openNamed}), and the data size in its header fits the file.
     *
     * @throws RefusedShmFileException the file may not be opened, or its header's size does not fit; nothing mapped
     * @throws IOException             it is not the expected region, or cannot be read
     */
    public static SharedRegionFile open(Path dir, String named, long expectedIncarnation, long expectedRegionId)
            throws IOException {
        try (FileChannel ch = ShmFiles.openNamed(dir, named, ShmFiles.REGION_SUFFIX)) {
            long size = ch.size();
            if (size < HEADER_BYTES) {
                throw new IOException(named + " is not a region file");
            }
            ByteBuffer header = ByteBuffer.allocate(32).order(ByteOrder.nativeOrder());
            while (header.hasRemaining() && ch.read(header, header.position()) > 0) {
                // read the fixed fields before mapping anything
            }
            long bytes = header.getLong(24);
            if (header.getLong(0) != MAGIC || header.getLong(8) != expectedIncarnation
                    || header.getLong(16) != expectedRegionId) {
                throw new IOException(named + " is not region " + expectedRegionId + " of the expected agent");
            }
            if (bytes <= 0 || bytes > size - HEADER_BYTES) { // not HEADER_BYTES + bytes > size: that can wrap
                throw new RefusedShmFileException(named, "its header claims " + bytes + " data bytes in a file of "
                        + size);
            }
            Arena arena = Arena.ofShared();
            try {
                MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + bytes, arena);
                // The mapping's page-table entries made now (the mapping is kept for every later session to this
                // region, ShmMappings), not by the copies of the first transfers.
                m.load();
                return new SharedRegionFile(Path.of(named), arena, nativeView(m, bytes, arena), false);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
        }
    }

    public Path path() {
        return path;
    }

    /** The region's bytes. Inaccessible after {@link #close()}. */
    public MemorySegment data() {
        return data;
    }

    /** Unmaps; the owner also deletes the file (a peer still mapping it keeps its pages until it unmaps). */
    @Override
    public void close() {
        arena.close();
        if (owner) {
            ShmFiles.deleteQuietly(path);
        }
    }
}
