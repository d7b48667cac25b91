package dev.ripcord.kv;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

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
public interface KvRegion extends AutoCloseable {

    long id();

    /** The region's memory; for a KV pool, page p is at {@code p * pageBytes}. */
    MemorySegment segment();

    long byteSize();

    /** True when the region lives in a shared-memory file that a same-host sender can write into directly. */
    boolean isSharedMemory();

    /** True when the agent allocated (and will free) the memory. */
    boolean isOwnedByAgent();

    /** The agent the region is registered with. */
    TransferAgent agent();

    /** Completes once the region is released. */
    CompletableFuture<Void> released();

    boolean isClosing();

    /** Stops new use; releases when the last session and send let go. Idempotent; never blocks. */
    @Override
    void close();
}
