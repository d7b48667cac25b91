package dev.ripcord.kv;

import dev.ripcord.kv.shm.SharedRegionFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Memory registered with a {@link TransferAgent}: the source of sends (a prefill page pool) or the destination of
 * receives (a decode page pool).
 *
 * <p>Ownership. A region from {@link TransferAgent#allocateRegion} owns its memory (a shared arena, or a shared
 * memory file when the agent offers that backend) and frees it exactly once, when released. A region from
 * {@link TransferAgent#registerRegion} only borrows the caller's segment: the caller keeps ownership and must not
 * free it before {@link #released()} completes.
 *
 * <p>Release. {@link #close()} stops new sessions and new sends on the region; the region is released (memory
 * freed, registration dropped, {@link #released()} completed) once every receive session targeting it is RELEASED
 * and no send still reads from it. Exactly once, however often close() is called.
 */
public final class KvRegion implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvRegion.class);

    private final TransferAgent agent;
    private final long id;
    private final MemorySegment segment;
    private final Arena ownedArena;
    private final SharedRegionFile sharedFile;
    private final CompletableFuture<Void> released = new CompletableFuture<>();
    private final long trackingId;

    // guarded by this: the live receive sessions and sends reading from it, by identity, so that a holder letting go
    // twice is caught at its second let-go, not read as a balanced count
    private final Set<Object> holders = Collections.newSetFromMap(new IdentityHashMap<>());
    private boolean closing;
    private boolean releaseClaimed;

    KvRegion(TransferAgent agent, long id, MemorySegment segment, Arena ownedArena, SharedRegionFile sharedFile) {
        this.agent = agent;
        this.id = id;
        this.segment = segment;
        this.ownedArena = ownedArena;
        this.sharedFile = sharedFile;
        this.trackingId = LiveResources.track(LiveResources.Kind.REGION, this::toString);
    }

    public long id() {
        return id;
    }

    /** The region's memory; for a KV pool, page p is at {@code p * pageBytes}. */
    public MemorySegment segment() {
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    /** True when the region lives in a shared-memory file that a same-host sender can write into directly. */
    public boolean isSharedMemory() {
        return sharedFile != null;
    }

    /** True when the agent allocated (and will free) the memory. */
    public boolean isOwnedByAgent() {
        return ownedArena != null || sharedFile != null;
    }

    public TransferAgent agent() {
        return agent;
    }

    /** Completes once the region is released. */
    public CompletableFuture<Void> released() {
        return released;
    }

    public synchronized boolean isClosing() {
        return closing;
    }

    /** Stops new use; releases when the last session and send let go. Idempotent; never blocks. */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        maybeRelease();
    }

    /** {@code holder} (a receive session's targets, a send) takes a reference; false once closing. */
    synchronized boolean retain(Object holder) {
        if (closing) {
            return false;
        }
        Checks.requireState(holders.add(holder), "region %s: %s retained it twice", id, holder);
        return true;
    }

    /**
     * {@code holder} lets go. A holder that lets go twice, or never retained it, is caught here, where it happens:
     * recorded ({@link LiveResources#violations()}) and refused with an {@link IllegalStateException}.
     */
    void unretain(Object holder) {
        synchronized (this) {
            if (!holders.remove(holder)) {
                throw LiveResources.doubleRelease("region " + id + "'s reference by " + holder);
            }
        }
        maybeRelease();
    }

    /** References held now (live receive sessions and sends reading from the region). */
    synchronized int references() {
        return holders.size();
    }

    SharedRegionFile sharedFile() {
        return sharedFile;
    }

    private void maybeRelease() {
        synchronized (this) {
            if (!closing || !holders.isEmpty() || releaseClaimed) {
                return;
            }
            releaseClaimed = true;
        }
        try {
            if (sharedFile != null) {
                sharedFile.close();
            } else if (ownedArena != null) {
                ownedArena.close();
            }
        } catch (RuntimeException e) {
            log.warn("region {} of agent {}: freeing its memory failed", id, agent.name(), e);
        } finally {
            LiveResources.untrack(trackingId);
            agent.regionReleased(this);
            released.complete(null);
        }
    }

    @Override
    public String toString() {
        return "KvRegion[" + id + " of agent " + agent.name() + ", " + segment.byteSize() + " bytes"
                + (sharedFile != null ? ", shm " + sharedFile.path() : isOwnedByAgent() ? ", owned" : ", borrowed")
                + (releaseClaimedSafe() ? ", released" : "") + "]";
    }

    private synchronized boolean releaseClaimedSafe() {
        return releaseClaimed;
    }
}
