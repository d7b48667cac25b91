package dev.ripcord.engine;

import java.nio.file.Path;

/**
 * Runtime options of an engine (as opposed to the model's shape, {@link ModelConfig}).
 *
 * @param threads        compute threads including the caller; default: available processors
 * @param pageTokens     positions per KV page, a multiple of 16; default 64
 * @param kvPages        pages in the pool; 0 means: sized from {@code kvMemoryBytes}, or, when that is 0 too, enough
 *                       for two full-context sequences
 * @param maxChunkTokens the most tokens one {@code prefill} call may compute; scratch memory is sized for it;
 *                       capped at the context length; default 2048
 * @param maxBatch       the most sequences one {@code decodeStep} may advance; default 16
 * @param kernels        native, vector or scalar kernels; default native (which is vector where the build packaged no
 *                       native library); see {@link KernelMode}
 * @param kvPoolMemory   where the KV page pool lives; {@code null} (the default): the engine's own arena. See
 *                       {@link KvPoolMemory} for who owns memory supplied from outside
 * @param safePoints     whether a forward checks its sequences' stop flags between layers
 *                       ({@link Sequence#requestStop()}); default true. Off only to measure what the checks cost
 *                       (the engine bench); with it off a stop takes effect at the next call
 * @param kvMemoryBytes  the KV pool's memory budget in bytes, used when {@code kvPages} is 0: as many whole pages
 *                       as fit in it, and never fewer than one full context (so that every request the model
 *                       accepts fits in an empty pool); 0 means no budget (two full contexts)
 * @param weightCache    a directory where the packed weights of a model file are kept as an image every engine on the
 *                       host maps read-only ({@link dev.ripcord.engine.model.WeightCache}), so that engines in
 *                       several processes hold one copy; {@code null} (the default): packed into the engine's arena
 * @param quantizedDot   which forwards take the integer dot products over quantized weights; default
 *                       {@link QuantizedDot#DECODE}. Changes results: engines that must agree take the same
 * @param nativeIsa      the native kernels' variant ({@link KernelMode#NATIVE}); default {@link NativeIsa#AUTO}, the
 *                       fastest the CPU runs; a forced variant the CPU cannot run fails the engine's start
 * @param prefixCachePages the most pages the prefix cache keeps that no request holds ({@link KvPagePool}); they
 *                       share the pool with live pages and are evicted when a request needs one; 0 turns the
 *                       cache off; default {@link Integer#MAX_VALUE} (as many as the pool has)
 */
public record EngineOptions(int threads, int pageTokens, int kvPages, int maxChunkTokens, int maxBatch,
                            KernelMode kernels, KvPoolMemory kvPoolMemory, boolean safePoints,
                            long kvMemoryBytes, Path weightCache, QuantizedDot quantizedDot, NativeIsa nativeIsa,
                            int prefixCachePages) {

    public EngineOptions {
        Checks.requireArgument(threads >= 1, "threads must be >= 1, got %s", threads);
        Checks.requireArgument(pageTokens > 0 && pageTokens % 16 == 0,
                "pageTokens must be a positive multiple of 16, got %s", pageTokens);
        Checks.requireArgument(kvPages >= 0, "kvPages must be >= 0 (0 = automatic), got %s", kvPages);
        Checks.requireArgument(maxChunkTokens >= 1, "maxChunkTokens must be >= 1, got %s", maxChunkTokens);
        Checks.requireArgument(maxBatch >= 1, "maxBatch must be >= 1, got %s", maxBatch);
        Checks.requireArgument(kernels != null, "kernels must not be null");
        Checks.requireArgument(kvMemoryBytes >= 0, "kvMemoryBytes must be >= 0 (0 = no budget), got %s",
                kvMemoryBytes);
        quantizedDot = quantizedDot == null ? QuantizedDot.DECODE : quantizedDot;
        nativeIsa = nativeIsa == null ? NativeIsa.AUTO : nativeIsa;
        Checks.requireArgument(prefixCachePages >= 0, "prefixCachePages must be >= 0 (0 = off), got %s",
                prefixCachePages);
    }

    /** Options with the default numerics and prefix cache. */
    public EngineOptions(int threads, int pageTokens, int kvPages, int maxChunkTokens, int maxBatch,
                         KernelMode kernels, KvPoolMemory kvPoolMemory, boolean safePoints,
                         long kvMemoryBytes, Path weightCache, QuantizedDot quantizedDot, NativeIsa nativeIsa) {
        this(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory, safePoints, kvMemoryBytes,
                weightCache, quantizedDot, nativeIsa, Integer.MAX_VALUE);
    }

    /** Options with the default numerics ({@link QuantizedDot#DECODE}, {@link NativeIsa#AUTO}). */
    public EngineOptions(int threads, int pageTokens, int kvPages, int maxChunkTokens, int maxBatch,
                         KernelMode kernels, KvPoolMemory kvPoolMemory, boolean safePoints,
                         long kvMemoryBytes, Path weightCache) {
        this(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory, safePoints, kvMemoryBytes,
                weightCache, null, null);
    }

    /** Options whose KV pool lives in the engine's own arena, safe-point checks on. */
    public EngineOptions(int threads, int pageTokens, int kvPages, int maxChunkTokens, int maxBatch,
                         KernelMode kernels) {
        this(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, null, true, 0, null, null, null);
    }

    public static EngineOptions defaults() {
        return new EngineOptions(Runtime.getRuntime().availableProcessors(), 64, 0, 2048, 16, KernelMode.NATIVE);
    }

    public EngineOptions withThreads(int n) {
        return new EngineOptions(n, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    public EngineOptions withPageTokens(int n) {
        return new EngineOptions(threads, n, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    public EngineOptions withKvPages(int n) {
        return new EngineOptions(threads, pageTokens, n, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    public EngineOptions withMaxChunkTokens(int n) {
        return new EngineOptions(threads, pageTokens, kvPages, n, maxBatch, kernels, kvPoolMemory, safePoints,
                kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    public EngineOptions withMaxBatch(int n) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, n, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    public EngineOptions withKernels(KernelMode mode) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, mode, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    /**
     * The KV page pool in memory {@code memory} supplies and keeps owning (e.g. a transfer agent's shared-memory
     * region); {@code null} puts it back in the engine's arena.
     */
    public EngineOptions withKvPoolMemory(KvPoolMemory memory) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, memory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    /**
     * Sizes the KV pool from a memory budget of {@code bytes} (when {@code kvPages} is 0); 0 removes the budget.
     */
    public EngineOptions withKvMemoryBytes(long bytes) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, bytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    /** Benches only: {@code false} removes the between-layer stop checks, to measure their cost. */
    public EngineOptions withSafePoints(boolean on) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                on, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, prefixCachePages);
    }

    /** Keeps packed weights as images in {@code directory} (see {@link #weightCache}); {@code null}: in the arena. */
    public EngineOptions withWeightCache(Path directory) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, directory, quantizedDot, nativeIsa, prefixCachePages);
    }

    /** Which forwards take the integer dot products (see {@link QuantizedDot}). */
    public EngineOptions withQuantizedDot(QuantizedDot dot) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, dot, nativeIsa, prefixCachePages);
    }

    /** Forces a variant of the native kernels ({@link NativeIsa#AUTO}: the fastest the CPU runs). */
    public EngineOptions withNativeIsa(NativeIsa isa) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, isa, prefixCachePages);
    }

    /** At most {@code pages} cached pages no request holds; 0 turns the prefix cache off. */
    public EngineOptions withPrefixCachePages(int pages) {
        return new EngineOptions(threads, pageTokens, kvPages, maxChunkTokens, maxBatch, kernels, kvPoolMemory,
                safePoints, kvMemoryBytes, weightCache, quantizedDot, nativeIsa, pages);
    }
}
