package dev.ripcord.kv.transport.shm;

import dev.ripcord.kv.session.Checks;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.session.LiveResources;
import dev.ripcord.kv.session.TargetMap;
import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.shm.SharedRegionFile;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sender's mappings of receivers' shared-memory files, shared by all sessions to the same receiver region.
 * Mapping a region afresh per session would re-fault every page (tens of milliseconds for 256 MiB), so mappings are
 * kept while in use and until retired: the receiver released the region (REGION_CLOSED), or the connection to
 * that receiver incarnation closed. A retired mapping is unmapped when its last session lets go.
 *
 * <p>The file paths come from the descriptor, that is from a peer: only files inside this agent's shared-memory
 * directory are mapped, and only after both of a descriptor's paths passed that check (see
 * {@link FenceTable#open} and {@link SharedRegionFile#open}).
 */
public final class ShmMappings {
    private static final Logger log = LoggerFactory.getLogger(ShmMappings.class);

    /** What one shared-memory send session writes through. */
    public record Target(FenceTable fences, MemorySegment data, TargetMap targets, int slot, long epoch, Runnable release) {
    }

    private static final class Mapped<T extends AutoCloseable> {
        final T value;
        int users;
        boolean retired;

        Mapped(T value) {
            this.value = value;
        }
    }

    private record RegionKey(long incarnation, long regionId) {
    }

    private final Path directory;
    private final Map<Long, Mapped<FenceTable>> fences = new HashMap<>();
    private final Map<RegionKey, Mapped<SharedRegionFile>> regions = new HashMap<>();

    /** Mappings of files in {@code directory}, the agent's shared-memory directory; no other file is mapped. */
    public ShmMappings(Path directory) {
        this.directory = directory;
    }

    /**
     * The descriptor's fence table and region, mapped or shared with earlier sessions.
     *
     * @throws dev.ripcord.kv.shm.RefusedShmFileException a path names a file outside the directory, a link, another
     *                                                    user's file, or a header whose sizes do not fit the file
     */
    public synchronized Target acquire(ReceiveDescriptor d) throws IOException {
        long inc = d.agentIncarnation();
        RegionKey key = new RegionKey(inc, d.regionId());
        Mapped<FenceTable> f = fences.get(inc);
        Mapped<SharedRegionFile> r = regions.get(key);
        boolean newFences = f == null || f.retired;
        boolean newRegion = r == null || r.retired;
        if (newFences) {
            f = new Mapped<>(FenceTable.open(directory, d.shmFenceFile(), inc));
        }
        if (newRegion) {
            try {
                r = new Mapped<>(SharedRegionFile.open(directory, d.shmRegionFile(), inc, d.regionId()));
            } catch (IOException | RuntimeException e) {
                if (newFences) {
                    f.value.close(); // a refused region leaves nothing of this descriptor mapped
                }
                throw e;
            }
        }
        if (newFences) {
            fences.put(inc, f);
        }
        if (newRegion) {
            regions.put(key, r);
        }
        Checks.requireArgument(d.fenceSlot() < f.value.slots(), "fence slot %s of %s", d.fenceSlot(),
                f.value.slots());
        TargetMap targets = new TargetMap(d.targets(), r.value.data().byteSize());
        f.users++;
        r.users++;
        Mapped<FenceTable> ff = f;
        Mapped<SharedRegionFile> rr = r;
        AtomicBoolean released = new AtomicBoolean(); // this session's use, by identity: a second release is caught
        return new Target(f.value, r.value.data(), targets, d.fenceSlot(), d.epoch(), () -> {
            if (!released.compareAndSet(false, true)) {
                throw LiveResources.doubleRelease("shared-memory mappings of request " + d.requestId() + " session "
                        + d.sessionId());
            }
            release(inc, ff, key, rr);
        });
    }

    private synchronized void release(long inc, Mapped<FenceTable> f, RegionKey key, Mapped<SharedRegionFile> r) {
        f.users--;
        r.users--;
        closeIfUnused(regions, key, r);
        closeIfUnused(fences, inc, f);
    }

    /** The receiver released this region. */
    public synchronized void retireRegion(long incarnation, long regionId) {
        RegionKey key = new RegionKey(incarnation, regionId);
        Mapped<SharedRegionFile> r = regions.get(key);
        if (r != null) {
            r.retired = true;
            closeIfUnused(regions, key, r);
        }
    }

    /** The connection to this receiver incarnation closed: drop its mappings once unused. */
    public synchronized void retireAgent(long incarnation) {
        regions.entrySet().removeIf(e -> {
            if (e.getKey().incarnation() != incarnation) {
                return false;
            }
            e.getValue().retired = true;
            return closeQuietly(e.getValue());
        });
        Mapped<FenceTable> f = fences.get(incarnation);
        if (f != null) {
            f.retired = true;
            closeIfUnused(fences, incarnation, f);
        }
    }

    /** Files mapped now (fence tables and regions). */
    public synchronized int mappedFiles() {
        return fences.size() + regions.size();
    }

    /** Agent close: every session is released by now; unmap everything. */
    public synchronized void closeAll() {
        regions.values().forEach(m -> { m.users = 0; closeQuietly(m); });
        fences.values().forEach(m -> { m.users = 0; closeQuietly(m); });
        regions.clear();
        fences.clear();
    }

    private static <K, T extends AutoCloseable> void closeIfUnused(Map<K, Mapped<T>> map, K key, Mapped<T> m) {
        if (m.retired && m.users == 0 && closeQuietly(m)) {
            map.remove(key, m);
        }
    }

    private static boolean closeQuietly(Mapped<? extends AutoCloseable> m) {
        if (m.users > 0) {
            return false;
        }
        try {
            m.value.close();
        } catch (Exception e) {
            log.debug("unmapping failed: {}", e.toString());
        }
        return true;
    }
}
