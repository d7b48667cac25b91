package dev.ripcord.kv.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

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
        long usable = Files.getFileStore(path.getParent()).getUsableSpace();
        if (usable < bytes + HEADER_BYTES) {
            // tmpfs pages are allocated on first touch; a full tmpfs would SIGBUS the copy, so refuse up front.
            throw new IOException(path.getParent() + " has " + usable + " usable bytes, region needs " + bytes);
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            ShmFiles.ownerOnly(path);
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + bytes, arena);
            m.set(ValueLayout.JAVA_LONG, 8, incarnation);
            m.set(ValueLayout.JAVA_LONG, 16, regionId);
            m.set(ValueLayout.JAVA_LONG, 24, bytes);
            m.set(ValueLayout.JAVA_LONG, 0, MAGIC);
            return new SharedRegionFile(path, arena, nativeView(m, bytes, arena), true);
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

    /** Maps an existing region file (sender side) after checking it is the region the descriptor names. */
    public static SharedRegionFile open(Path path, long expectedIncarnation, long expectedRegionId)
            throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = ch.size();
            if (size < HEADER_BYTES) {
                throw new IOException(path + " is not a region file");
            }
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            long bytes = m.get(ValueLayout.JAVA_LONG, 24);
            if (m.get(ValueLayout.JAVA_LONG, 0) != MAGIC
                    || m.get(ValueLayout.JAVA_LONG, 8) != expectedIncarnation
                    || m.get(ValueLayout.JAVA_LONG, 16) != expectedRegionId
                    || HEADER_BYTES + bytes > size) {
                throw new IOException(path + " is not region " + expectedRegionId + " of the expected agent");
            }
            return new SharedRegionFile(path, arena, nativeView(m, bytes, arena), false);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
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
