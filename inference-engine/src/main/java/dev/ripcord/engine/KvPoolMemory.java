package dev.ripcord.engine;

import java.lang.foreign.MemorySegment;

/**
 * Where an engine's {@link KvPagePool} lives when not in the engine's own arena (the default, a {@code null}
 * {@link EngineOptions#kvPoolMemory()}): memory someone else owns, such as a KV transfer agent's shared-memory
 * region that a co-located peer process can write into directly.
 *
 * <p>Ownership contract for memory supplied from outside. The engine calls {@link #allocate(long)} exactly once,
 * while it is being built, with the pool's size in bytes ({@code kvPages · pageBytes}, known only once the model's
 * shape is read). The supplier keeps ownership of the segment it returns: the engine never frees it, and the
 * supplier must keep it valid (mapped, not freed) until {@link InferenceEngine#close()} has returned, and until
 * every reader of the pages outside the engine (a transfer in flight) is done. If the engine's construction fails
 * after {@code allocate} returned, the segment is the supplier's to free as well.
 */
@FunctionalInterface
public interface KvPoolMemory {

    /** The pool's alignment: a segment from {@link #allocate} must start at a multiple of it. */
    long ALIGNMENT = 64;

    /**
     * Memory for a pool of {@code bytes} bytes: a native segment of at least that size, aligned to
     * {@link #ALIGNMENT}, accessible from any thread, that the caller keeps owning. Called once.
     */
    MemorySegment allocate(long bytes);
}
