package dev.ripcord.kv.session;

import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.shm.SharedRegionFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link KvRegion} implementation: memory registered with an agent, with its holders tracked by identity.
 * The agent makes it and is told, once, when it is released.
 */
public final class DefaultKvRegion implements KvRegion {
    private static final Logger log = LoggerFactory.getLogger(DefaultKvRegion.class);

    private final TransferAgent agent;
    private final Consumer<DefaultKvRegion> onReleased;
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

    /** @param onReleased told once, when the region is released (its memory freed) */
    public DefaultKvRegion(TransferAgent agent, long id, MemorySegment segment, Arena ownedArena,
                           SharedRegionFile sharedFile, Consumer<DefaultKvRegion> onReleased) {
        this.agent = agent;
        this.onReleased = onReleased;
        this.id = id;
        this.segment = segment;
        this.ownedArena = ownedArena;
        this.sharedFile = sharedFile;
        this.trackingId = LiveResources.track(LiveResources.Kind.REGION, this::toString);
    }

    @Override
    public long id() {
        return id;
    }

    /** The region's memory; for a KV pool, page p is at {@code p * pageBytes}. */
    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long byteSize() {
        return segment.byteSize();
    }

    /** True when the region lives in a shared-memory file that a same-host sender can write into directly. */
    @Override
    public boolean isSharedMemory() {
        return sharedFile != null;
    }

    /** True when the agent allocated (and will free) the memory. */
    @Override
    public boolean isOwnedByAgent() {
        return ownedArena != null || sharedFile != null;
    }

    @Override
    public TransferAgent agent() {
        return agent;
    }

    /** Completes once the region is released. */
    @Override
    public CompletableFuture<Void> released() {
        return released;
    }

    @Override
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
    public synchronized boolean retain(Object holder) {
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
    public void unretain(Object holder) {
        synchronized (this) {
            if (!holders.remove(holder)) {
                throw LiveResources.doubleRelease("region " + id + "'s reference by " + holder);
            }
        }
        maybeRelease();
    }

    /** References held now (live receive sessions and sends reading from the region). */
    public synchronized int references() {
        return holders.size();
    }

    public SharedRegionFile sharedFile() {
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
            onReleased.accept(this);
            released.complete(null);
        }
    }

    @Override
    public String toString() {
        return "DefaultKvRegion[" + id + " of agent " + agent.name() + ", " + segment.byteSize() + " bytes"
                + (sharedFile != null ? ", shm " + sharedFile.path() : isOwnedByAgent() ? ", owned" : ", borrowed")
                + (releaseClaimedSafe() ? ", released" : "") + "]";
    }

    private synchronized boolean releaseClaimedSafe() {
        return releaseClaimed;
    }
}
