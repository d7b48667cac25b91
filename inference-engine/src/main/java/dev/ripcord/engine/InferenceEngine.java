package dev.ripcord.engine;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.engine.kernel.Kernels;
import dev.ripcord.engine.kernel.NativeKernels;
import dev.ripcord.engine.kernel.QuantRows;
import dev.ripcord.engine.kernel.WorkerPool;
import dev.ripcord.engine.model.ModelWeights;
import dev.ripcord.engine.model.Transformer;
import dev.ripcord.engine.model.WeightCache;
import dev.ripcord.engine.weights.GgufWeights;
import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.engine.weights.WeightSource;
import dev.ripcord.tokenizer.BpeTokenizer;
import dev.ripcord.tokenizer.ByteTokenizer;
import dev.ripcord.tokenizer.InvalidTokenizerFileException;
import dev.ripcord.tokenizer.Tokenizer;
import dev.ripcord.format.gguf.GgufFile;

/**
 * A Llama-style transformer on the CPU with a paged KV cache: the library both the prefill and the decode worker
 * embed.
 *
 * <h2>Lifecycle and ownership</h2>
 * An engine owns one shared {@link Arena} (weights, scratch and the {@link KvPagePool}) and a {@link WorkerPool}
 * of {@link EngineOptions#threads()} - 1 threads; {@link #close()} releases both. The page pool may instead live
 * in memory supplied from outside ({@link EngineOptions#kvPoolMemory()}, e.g. a transfer agent's shared-memory
 * region): the supplier owns that memory and frees it, after {@link #close()} has returned. An engine loaded from a GGUF file
 * also owns that file's mapping (block-quantized weights are used in place) and unmaps it on close. Every {@link Sequence} belongs
 * to the engine that created it and holds pages until {@link #free(Sequence)}.
 *
 * <h2>Threading</h2>
 * One scheduler thread at a time may call the engine; a concurrent call fails fast with
 * {@link IllegalStateException} rather than corrupting scratch memory. No lock is held while computing. The page
 * pool and the accessors of {@link Sequence}, {@link KvPagePool} and {@link #stats()} may be read from other
 * threads (e.g. a transfer library reading pages).
 *
 * <h2>Safe points</h2>
 * Every layer boundary of a forward is a safe point, and so is every eighth work item of a layer's projections
 * and of the output head (item 0 of each region always) and every attention item. {@link Sequence#requestStop()},
 * from any thread, makes a {@link #prefill} of that sequence in progress stop at the next of them (the chunk in
 * progress abandons its layer or the output head part way, or stops before the next layer or the output head) and
 * throw {@link ComputeStoppedException}, which says at which layer ({@code layers} for the output head) and
 * whether inside it; a {@link #decodeStep} stops at the next of them the same way once every sequence of its batch
 * has a stop requested. Inside a decode step each sequence also stops alone: before each of its attention items
 * and its rows of each output-head item, and before its sampling, a sequence whose stop was requested is left out
 * (the shared projections still compute its row), and the step returns {@link #STOPPED} for it while the others'
 * results keep their bits. A stopped call leaves its sequences, or a sequence it left out, as they were before it
 * (length, logits, pending token, history); only pages it allocated for the stopped positions stay with the
 * sequence until {@link #free}. Between two calls is a safe point too: a scheduler may simply stop calling and
 * free the sequence.
 *
 * <h2>Prefill/decode disaggregation</h2>
 * Prefill side: {@link #newSequence}, {@link #prefill} chunk by chunk, {@link #sample} the first token, ship
 * {@link Sequence#pages()} (raw bytes, {@link KvLayout}) and the first token. Decode side, built from the same
 * preset and seed (or checkpoint) and the same {@code pageTokens}: {@link #reserve} pages for the prompt before
 * the bytes arrive, let the transfer write them at {@link KvPagePool#offsetOf}, then {@link #adopt} and
 * {@link #decodeStep}. The decode side then produces exactly the tokens the prefill engine would have.
 *
 * <h2>Determinism</h2>
 * FP32 with a fixed reduction order per kernel, so results are bit-identical for any thread count, chunking and
 * batch composition, and between vector and scalar kernels of the same lane count.
 */
public final class InferenceEngine implements AutoCloseable {
    /**
     * What {@link #decodeStep} returns for a sequence of its batch that it left out because the sequence's stop was
     * requested during the step: no token, nothing to emit.
     */
    public static final int STOPPED = -1;

    private static final AtomicLong ENGINE_IDS = new AtomicLong();

    private final long engineId = ENGINE_IDS.incrementAndGet();
    private final ModelConfig config;
    private final EngineOptions options;
    private final String description;
    private final Tokenizer tokenizer;
    private final Arena arena;
    private final WorkerPool workers;
    private final KvLayout layout;
    private final KvPagePool pagePool;
    private final Transformer transformer;
    private final Kernels kernels;
    private final AtomicBoolean busy = new AtomicBoolean();
    /** The thread of the latest computation ({@link #enter}). */
    private volatile Thread computeThread;
    private final ArrayDeque<float[]> spareLogits = new ArrayDeque<>();
    private final AtomicLong sequenceIds = new AtomicLong();
    private final Map<Long, Sequence> live = new ConcurrentHashMap<>();
    private final AtomicLong prefillChunks = new AtomicLong();
    private final AtomicLong prefillTokens = new AtomicLong();
    private final AtomicLong prefillNanos = new AtomicLong();
    private final AtomicLong decodeSteps = new AtomicLong();
    private final AtomicLong decodeTokens = new AtomicLong();
    private final AtomicLong decodeNanos = new AtomicLong();
    private final AtomicLong prefillStops = new AtomicLong();
    private final AtomicLong decodeStops = new AtomicLong();
    private final AtomicLong prefixQueriedTokens = new AtomicLong();
    private final AtomicLong prefixHitTokens = new AtomicLong();
    private final int[] batchTokens;
    private final int[] batchPositions;
    private final int[][] batchTables;
    /** The batch of the decode step in progress, for its safe point (engine-loop state, like the arrays above). */
    private List<Sequence> stepBatch = List.of();
    private volatile LayerBoundaryListener layerListener;
    /** The layer boundary the forward in progress last reached, or -1; written (release) at each boundary. */
    private final AtomicInteger boundary = new AtomicInteger(-1);
    private final Transformer.SafePoint decodeSafePoint = new Transformer.SafePoint() {
        @Override
        public boolean stopBefore(int layer) {
            boundary.setRelease(layer);
            LayerBoundaryListener listener = layerListener;
            if (listener != null) {
                listener.beforeLayer(layer);
            }
            return allStopRequested(stepBatch);
        }

        @Override
        public boolean stopInside(int layer) {
            LayerBoundaryListener listener = layerListener;
            if (listener != null) {
                listener.insideLayer(layer);
            }
            return allStopRequested(stepBatch);
        }

        @Override
        public boolean stopRow(int layer, int row) {
            if (stepBatch.get(row).stopRequested()) {
                // Racing workers of one region write the same layer; regions are ordered by the pool's join.
                if (stepStoppedAt[row] < 0) {
                    stepStoppedAt[row] = layer;
                }
                return true;
            }
            LayerBoundaryListener listener = layerListener;
            if (listener != null) {
                listener.rowItem(layer, row);
            }
            return false;
        }
    };
    /**
     * Per row of the decode step in progress: the layer where a per-sequence check first left that sequence out
     * ({@code layers}: in the output head), or -1. Engine-loop state, written by the compute workers.
     */
    private final int[] stepStoppedAt;
    private volatile boolean closed;
    /** The mapped model file the weights point into (GGUF), closed after the arena; null when nothing is mapped. */
    private final AutoCloseable modelFile;
    /** The native decode kernels, or null where the engine runs none. */
    private final QuantRows quantRows;
    /** How the weights were loaded (packed privately, or mapped from a weight cache image). */
    private final WeightCache.Loaded weightsLoad;

    private InferenceEngine(WeightSource source, Tokenizer tokenizer, EngineOptions options) {
        this(source, tokenizer, options, null);
    }

    private InferenceEngine(WeightSource source, Tokenizer tokenizer, EngineOptions options, AutoCloseable modelFile) {
        this.modelFile = modelFile;
        Checks.requireState(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN,
                "the KV page format is little-endian; this platform is %s", ByteOrder.nativeOrder());
        this.config = source.config();
        Checks.requireArgument(tokenizer.vocabSize() <= config.vocabSize(),
                "tokenizer vocabulary %s exceeds the model's %s", tokenizer.vocabSize(), config.vocabSize());
        int maxChunk = Math.min(options.maxChunkTokens(), config.contextLength());
        int kvPages = poolPages(config, options);
        this.options = new EngineOptions(options.threads(), options.pageTokens(), kvPages, maxChunk,
                options.maxBatch(), options.kernels(), options.kvPoolMemory(), options.safePoints(),
                options.kvMemoryBytes(), options.weightCache(), options.quantizedDot(), options.nativeIsa(),
                options.prefixCachePages());
        this.description = source.describe();
        this.tokenizer = tokenizer;
        this.kernels = options.kernels() == KernelMode.SCALAR ? Kernels.scalar(vectorLanes()) : Kernels.vector();
        this.quantRows = nativeKernels(options);
        this.layout = KvLayout.of(config, options.pageTokens());
        this.arena = Arena.ofShared();
        WorkerPool pool = null;
        try {
            pool = new WorkerPool(options.threads(), "ripcord-engine-" + engineId);
            WeightCache.Loaded loaded = options.weightCache() == null
                    ? WeightCache.inArena(source, 4 * kernels.lanes(), arena, null)
                    : new WeightCache(options.weightCache()).load(source, 4 * kernels.lanes(), arena);
            ModelWeights weights = loaded.weights();
            this.weightsLoad = loaded;
            this.pagePool = options.kvPoolMemory() == null
                    ? new KvPagePool(layout, kvPages, arena, options.prefixCachePages())
                    : new KvPagePool(layout, kvPages, options.kvPoolMemory().allocate(
                            KvPagePool.bytesFor(layout, kvPages)), options.prefixCachePages());
            this.transformer = new Transformer(weights, layout, pagePool.segment(), kernels, quantRows,
                    options.quantizedDot(), pool, maxChunk, options.maxBatch(), arena);
        } catch (RuntimeException | Error e) {
            if (pool != null) {
                pool.close();
            }
            arena.close();
            throw e;
        }
        this.workers = pool;
        this.batchTokens = new int[options.maxBatch()];
        this.batchPositions = new int[options.maxBatch()];
        this.batchTables = new int[options.maxBatch()][];
        this.stepStoppedAt = new int[options.maxBatch()];
    }

    /**
     * Pages in the pool: {@code kvPages} when given; else as many as fit in the {@code kvMemoryBytes} budget, at least
     * one full context (a request the model accepts must fit in an empty pool, or it could never be served); else
     * two full contexts.
     */
    public static int poolPages(ModelConfig config, EngineOptions options) {
        if (options.kvPages() > 0) {
            return options.kvPages();
        }
        KvLayout layout = KvLayout.of(config, options.pageTokens());
        int context = layout.pagesFor(config.contextLength());
        if (options.kvMemoryBytes() > 0) {
            long fit = options.kvMemoryBytes() / layout.pageBytes();
            return (int) Math.min(Integer.MAX_VALUE, Math.max(context, fit));
        }
        return 2 * context;
    }

    /**
     * The native decode kernels {@code options} ask for: null for {@link KernelMode#VECTOR} and
     * {@link KernelMode#SCALAR}, and for {@link KernelMode#NATIVE} where the library is not available (the engine
     * then runs as {@code VECTOR}, unless a variant was forced: that fails).
     */
    private static QuantRows nativeKernels(EngineOptions options) {
        if (options.kernels() != KernelMode.NATIVE) {
            return null;
        }
        if (options.nativeIsa() == NativeIsa.AUTO) {
            return NativeKernels.available() ? NativeKernels.best() : null;
        }
        return NativeKernels.of(NativeKernels.Isa.valueOf(options.nativeIsa().name()));
    }

    /**
     * The kernels that run, e.g. {@code native-avx2+vector-256} (native decode kernels, the Vector API at 256 bits
     * for the rest), {@code vector-512}, {@code scalar-16}: for logs and benches. Engines agree bit for bit when
     * this and {@link #numerics()} agree.
     */
    public String kernelName() {
        String base = kernels.name() + "-" + (kernels.name().equals("vector") ? 32 * kernels.lanes() : kernels.lanes());
        return quantRows == null ? base : quantRows.name() + "+" + base;
    }

    /**
     * The numeric definition this engine's results follow, which two engines that share KV caches or compare
     * outputs (a prefill and a decode worker) must have in common: the lane count of the float reductions, which
     * integer dot product decode steps use ({@code native}: one definition for every CPU; {@code lanes}: the Vector
     * API's, per lane count), and {@link QuantizedDot}. The native variant (AVX2, AVX-512 VNNI, …) is not part of
     * it: every variant gives the same bits.
     */
    public String numerics() {
        return "lanes=%d,int8=%s,quantizedDot=%s".formatted(kernels.lanes(), quantRows == null ? "lanes" : "native",
                options.quantizedDot().name().toLowerCase(java.util.Locale.ROOT));
    }

    /** The lane count the vector kernels use, or 16 if the JVM was started without the Vector API module. */
    private static int vectorLanes() {
        try {
            return Kernels.vector().lanes();
        } catch (LinkageError noVectorModule) {
            return 16;
        }
    }

    /** An engine with {@code preset}'s shape and random weights from {@code seed}, default options. */
    public static InferenceEngine create(Preset preset, long seed) {
        return create(preset, seed, EngineOptions.defaults());
    }

    /** An engine with {@code preset}'s shape and random weights from {@code seed}. */
    public static InferenceEngine create(Preset preset, long seed, EngineOptions options) {
        return new InferenceEngine(new RandomWeights(preset.config(), seed, preset.id()),
                new ByteTokenizer(preset.config().vocabSize()), options);
    }

    /** An engine of any shape with random weights from {@code seed} and the byte tokenizer (vocab >= 259). */
    public static InferenceEngine create(ModelConfig config, long seed, EngineOptions options) {
        return new InferenceEngine(new RandomWeights(config, seed, "custom"), new ByteTokenizer(config.vocabSize()),
                options);
    }

    /**
     * An engine serving a llama2.c checkpoint. The file is memory-mapped, repacked into the engine's memory and
     * unmapped before this returns.
     *
     * <p>A file that starts with the magic {@code GGUF} is loaded as a GGUF model instead (see
     * {@link #loadGguf}).
     *
     * @param checkpoint a legacy (version 0) llama2.c checkpoint, or a GGUF file
     * @param tokenizer  the matching llama2.c {@code tokenizer.bin}, or {@code null} for the byte tokenizer (for a
     *                   GGUF file: the tokenizer in its metadata)
     * @throws InvalidModelFileException if either file is malformed or truncated (the message names the file)
     */
    public static InferenceEngine load(Path checkpoint, Path tokenizer, EngineOptions options) throws IOException {
        if (java.nio.file.Files.isRegularFile(checkpoint) && GgufFile.isGguf(checkpoint)) {
            return loadGguf(checkpoint, tokenizer == null ? null : weights -> BpeTokenizer.load(tokenizer,
                    weights.config().vocabSize()), options);
        }
        ModelConfig config = Llama2cCheckpoint.readHeader(checkpoint);
        Tokenizer t = tokenizer == null ? new ByteTokenizer(Math.max(ByteTokenizer.VOCAB_SIZE, config.vocabSize()))
                : loadTokenizer(tokenizer, config.vocabSize());
        if (tokenizer == null && config.vocabSize() < ByteTokenizer.VOCAB_SIZE) {
            throw new InvalidModelFileException(checkpoint, "vocab_size %d is too small for the byte tokenizer; "
                    .formatted(config.vocabSize()) + "pass the model's tokenizer.bin");
        }
        try (Llama2cCheckpoint source = Llama2cCheckpoint.open(checkpoint)) {
            return new InferenceEngine(source, t, options);
        }
    }

    /** Chooses the tokenizer of a GGUF model once its metadata is read. */
    @FunctionalInterface
    public interface TokenizerChoice {
        Tokenizer choose(GgufWeights weights) throws IOException;
    }

    /**
     * An engine serving a GGUF model (architectures {@code llama} and {@code qwen2}; see {@link GgufWeights}). The
     * file stays memory-mapped for the engine's life: Q8_0/Q4_0/Q4_K/Q6_K matrices are used in place, F32/F16/BF16
     * ones are widened into the engine's memory (or into an image of {@link EngineOptions#weightCache}). The KV cache
     * is F32 as for every model.
     *
     * @param tokenizer chooses the tokenizer from the file's metadata; {@code null} means the file's own
     *                  ({@code tokenizer.ggml.model} llama or gpt2, see {@link GgufWeights#tokenizer()})
     * @throws InvalidModelFileException malformed file, unsupported architecture or tensor type (named)
     */
    public static InferenceEngine loadGguf(Path model, TokenizerChoice tokenizer, EngineOptions options)
            throws IOException {
        GgufWeights weights = GgufWeights.open(model);
        try {
            Tokenizer t;
            if (tokenizer != null) {
                t = tokenizer.choose(weights);
            } else {
                t = weights.tokenizer().orElseThrow(() -> new InvalidModelFileException(model, "the file names no "
                        + "tokenizer.ggml.model; pass a tokenizer"));
            }
            return new InferenceEngine(weights, t, options, weights);
        } catch (IOException | RuntimeException | Error e) {
            weights.close();
            throw e;
        }
    }

    /**
     * How the engine holds its weights, for a start-up log line: the packed weights (in process memory or a shared
     * image) and, for a block-quantized GGUF file, the bytes of matrices it reads in place from the file's mapping.
     */
    public String weightsDescription() {
        long quantized = weightsLoad.weights().quantizedBytes();
        return weightsLoad.describe() + (quantized == 0 ? "" : String.format(Locale.ROOT,
                "; quantized matrices %.1f MB used in place from the model file's read-only mapping", quantized / 1e6));
    }

    /** How the engine got its packed weights (in its own memory, or from a {@link WeightCache} image). */
    public WeightCache.Origin weightsOrigin() {
        return weightsLoad.origin();
    }

    public ModelConfig config() {
        return config;
    }

    /** The effective options (automatic values resolved). */
    public EngineOptions options() {
        return options;
    }

    private static Tokenizer loadTokenizer(Path file, int vocabSize) throws IOException {
        try {
            return BpeTokenizer.load(file, vocabSize);
        } catch (InvalidTokenizerFileException e) {
            // One exception type for every malformed file the engine is given; the tokenizer library has its own.
            throw new InvalidModelFileException(e.path(), e.problem());
        }
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    public KvPagePool pagePool() {
        return pagePool;
    }

    public KvLayout kvLayout() {
        return layout;
    }

    /** Which weights and kernels this engine runs, for logs. */
    public String describe() {
        return "%s, %s kernels (%s), %d threads, %d KV pages of %d tokens (%d bytes)".formatted(description,
                kernelName(), numerics(), workers.size(), pagePool.pageCount(), layout.pageTokens(),
                layout.pageBytes());
    }

    // ------------------------------------------------------------------------------------------ sequences

    /** A new, empty sequence ({@link SequenceState#ACTIVE}, length 0, no pages). */
    public Sequence newSequence(SamplingParams sampling) {
        requireOpen();
        Sequence s = new Sequence(sequenceIds.incrementAndGet(), this, sampling, SequenceState.ACTIVE,
                takeLogits());
        live.put(s.id, s);
        return s;
    }

    /**
     * Starts a new, empty sequence from the prefix cache: attaches the pages of the longest cached page-aligned
     * prefix of {@code tokens} (each page matched by its key, its token IDs and its parent, so a key collision never
     * serves another prompt's KV) and makes the sequence file the pages its chunks complete under
     * {@code pageKeys}. At least the prompt's last token is left to compute, so the first output token always comes
     * from a real forward pass; the caller prefills from {@link Sequence#length()} on, with chunks of
     * {@code tokens}. Cached pages are never written again: a sequence only writes positions at or beyond its
     * length.
     *
     * @param tokens   the whole prompt
     * @param pageKeys the chained keys of its complete pages ({@code tokens.length / pageTokens} of them,
     *                 {@code dev.ripcord.protocol.prefix.PrefixKeys}); opaque to the engine
     * @return the prompt tokens taken from the cache, a multiple of the page size (0 when nothing matched or the
     *         cache is off)
     */
    public int reusePrefix(Sequence seq, int[] tokens, long[] pageKeys) {
        requireActive(seq);
        Checks.requireState(seq.length == 0 && seq.pageCount == 0 && seq.cacheKeys == null,
                "sequence %s is not new: the prefix cache only starts sequences", seq.id);
        int pageTokens = layout.pageTokens();
        Checks.requireArgument(pageKeys.length <= tokens.length / pageTokens,
                "%s page keys for a prompt of %s tokens (%s complete pages)", pageKeys.length, tokens.length,
                tokens.length / pageTokens);
        for (int token : tokens) {
            requireToken(token);
        }
        List<KvPagePool.CachedPage> matched = pagePool.match(tokens, pageKeys, (tokens.length - 1) / pageTokens);
        seq.cacheTokens = tokens;
        seq.cacheKeys = pageKeys;
        seq.chain = new KvPagePool.CachedPage[pageKeys.length];
        for (int i = 0; i < matched.size(); i++) {
            seq.addPage(matched.get(i).page);
            seq.chain[i] = matched.get(i);
        }
        seq.linkedPages = matched.size();
        int reused = matched.size() * pageTokens;
        seq.length = reused;
        seq.cachedTokens = reused;
        seq.recordPrompt(tokens, 0, reused);
        prefixQueriedTokens.addAndGet(tokens.length);
        prefixHitTokens.addAndGet(reused);
        return reused;
    }

    /**
     * Tells {@code listener} about every change of the prefix cache from now on (pages stored, removed, the cache
     * cleared), after the change and outside the engine's locks; null stops telling.
     */
    public void onPrefixCacheChange(PrefixCacheListener listener) {
        pagePool.listener(listener);
    }

    /**
     * Empties the prefix cache (an operator's clear): cached pages no request holds return to the free stack at
     * once, pages requests hold stay theirs. The listener is told {@code cleared()}. Any thread.
     *
     * @return the pages that were cached
     */
    public int clearPrefixCache() {
        requireOpen();
        return pagePool.clearCache();
    }

    /** The prefix cache's counters. */
    public PrefixCacheStats prefixCacheStats() {
        return new PrefixCacheStats(pagePool.cacheEnabled(), prefixQueriedTokens.get(), prefixHitTokens.get(),
                pagePool.pagesCached(), pagePool.pagesEvictable(), pagePool.evictions());
    }

    /**
     * Receiving side of a transfer: a sequence in {@link SequenceState#AWAITING_KV} with the pages a prompt of
     * {@code promptTokens} positions needs, allocated now so the sender can write into them. Call
     * {@link #adopt} once the bytes have arrived, or {@link #free} if the transfer is abandoned.
     *
     * @throws KvPoolExhaustedException if the pool lacks the pages (nothing is allocated)
     */
    public Sequence reserve(int promptTokens, SamplingParams sampling) {
        requireOpen();
        Checks.requireArgument(promptTokens >= 1 && promptTokens < config.contextLength(),
                "promptTokens %s must be in [1, %s)", promptTokens, config.contextLength());
        int n = layout.pagesFor(promptTokens);
        int[] pages = new int[n];
        pagePool.allocate(n, pages);
        Sequence s = new Sequence(sequenceIds.incrementAndGet(), this, sampling, SequenceState.AWAITING_KV,
                takeLogits());
        for (int p : pages) {
            s.addPage(p);
        }
        live.put(s.id, s);
        return s;
    }

    /**
     * Marks a reserved sequence's pages as holding the KV of {@code promptTokens} positions (written by a
     * transfer) and makes {@code firstToken} — sampled by the prefill side from the prompt's last logits — the
     * token the next {@link #decodeStep} feeds. Sampling continues with the sequence's second random draw.
     */
    public void adopt(Sequence seq, int promptTokens, int firstToken) {
        adopt(seq, promptTokens, null, firstToken, null);
    }

    /**
     * {@link #adopt(Sequence, int, int)} with the history the sampling may read: {@code promptIds} (the prompt's
     * token ids, needed by a repetition penalty; may be null otherwise) and what the prefill side reported about
     * the first token ({@code firstLogprobs}, may be null), which becomes {@link Sequence#lastLogprobs()}.
     */
    public void adopt(Sequence seq, int promptTokens, int[] promptIds, int firstToken, TokenLogprobs firstLogprobs) {
        requireOwned(seq);
        Checks.requireState(seq.state == SequenceState.AWAITING_KV, "sequence %s is %s, not AWAITING_KV", seq.id,
                seq.state);
        Checks.requireArgument(promptTokens >= 1 && promptTokens <= seq.capacity()
                        && promptTokens < config.contextLength(),
                "promptTokens %s must be in [1, %s] (the reserved capacity) and below the context %s", promptTokens,
                seq.capacity(), config.contextLength());
        requireToken(firstToken);
        seq.state = seq.state.transitionTo(SequenceState.ACTIVE, seq.id);
        seq.length = promptTokens;
        seq.pendingToken = firstToken;
        seq.sampled = 1;
        seq.hasLogits = false;
        if (seq.sampling.readsPrompt()) {
            Checks.requireArgument(promptIds != null && promptIds.length == promptTokens,
                    "sequence %s: a repetition penalty needs the %s prompt ids", seq.id, promptTokens);
            seq.recordPrompt(promptIds, 0, promptTokens);
        }
        seq.recordOutput(firstToken);
        seq.lastLogprobs = firstLogprobs;
    }

    /**
     * A copy of an active sequence (its KV pages copied into fresh pages) with its own sampling parameters, e.g.
     * for several completions of one prompt. The pending token and logits are copied too.
     */
    public Sequence fork(Sequence seq, SamplingParams sampling) {
        requireActive(seq);
        int n = seq.pageCount;
        int[] pages = new int[n];
        pagePool.allocate(n, pages);
        Sequence copy = new Sequence(sequenceIds.incrementAndGet(), this, sampling, SequenceState.ACTIVE,
                takeLogits());
        for (int i = 0; i < n; i++) {
            pagePool.page(pages[i]).copyFrom(pagePool.page(seq.pageTable[i]));
            copy.addPage(pages[i]);
        }
        copy.length = seq.length;
        copy.pendingToken = seq.pendingToken;
        copy.sampled = seq.sampled;
        copy.hasLogits = seq.hasLogits;
        if (sampling.readsPrompt()) {
            copy.recordPrompt(seq.promptIds, 0, seq.promptIdCount);
        }
        for (int i = 0; i < seq.outputIdCount; i++) {
            copy.recordOutput(seq.outputIds[i]);
        }
        System.arraycopy(seq.logits, 0, copy.logits, 0, config.vocabSize());
        live.put(copy.id, copy);
        return copy;
    }

    /**
     * Allocates pages now so the sequence can hold {@code tokens} positions (prefill otherwise allocates per
     * chunk). Lets a scheduler fail before computing anything.
     *
     * @throws KvPoolExhaustedException if the pool lacks the pages (nothing is allocated)
     */
    public void ensureCapacity(Sequence seq, int tokens) {
        requireActive(seq);
        Checks.requireArgument(tokens <= config.contextLength(), "%s tokens exceed the context length %s", tokens,
                config.contextLength());
        int missing = layout.pagesFor(tokens) - seq.pageCount;
        if (missing > 0) {
            int[] pages = new int[missing];
            pagePool.allocate(missing, pages);
            for (int p : pages) {
                seq.addPage(p);
            }
        }
    }

    /**
     * Returns the sequence's pages to the pool: drops its reference to each, tail first. A page nobody else holds
     * returns to the free stack, or stays in the prefix cache, evictable, when it is cached. Freeing twice throws.
     *
     * @return the page references dropped (one per page of the sequence): what a worker's lifecycle log reports as
     *         freed, for the audit to reconcile with what the job reserved
     */
    public int free(Sequence seq) {
        requireOwned(seq);
        seq.state = seq.state.transitionTo(SequenceState.FREED, seq.id);
        int returned = seq.pageCount;
        pagePool.freeAll(seq.pageTable, seq.pageCount);
        seq.pageCount = 0;
        seq.chain = null;
        seq.pendingToken = -1;
        seq.hasLogits = false;
        live.remove(seq.id);
        float[] logits = seq.logits;
        seq.logits = null;
        // Kept for the next sequence only when freed on the thread that computes, outside a computation (a worker's
        // engine loop): then no forward of this engine can still be writing into it.
        if (logits != null && Thread.currentThread() == computeThread && !busy.get()) {
            synchronized (spareLogits) {
                if (spareLogits.size() < options.maxBatch()) {
                    spareLogits.push(logits);
                }
            }
        }
        return returned;
    }

    /**
     * A logits array for a new sequence, zeroed: a spare one if there is one, else a new one. A sequence's logits
     * live as long as it does (a request's whole generation, seconds), so an array per sequence outlived the young
     * generation and was promoted: 128 KB per request at a 32,000-token vocabulary, collected only by full
     * collections. The spares are the arrays of freed sequences, at most {@link EngineOptions#maxBatch()} of them.
     */
    private float[] takeLogits() {
        float[] spare;
        synchronized (spareLogits) {
            spare = spareLogits.poll();
        }
        if (spare == null) {
            return new float[config.vocabSize()];
        }
        Arrays.fill(spare, 0f);
        return spare;
    }

    /** Spare logits arrays (see {@link #takeLogits}); for tests. */
    int spareLogits() {
        synchronized (spareLogits) {
            return spareLogits.size();
        }
    }

    // ------------------------------------------------------------------------------------------ compute

    /**
     * Computes one prefill chunk: positions {@code [from, to)} of {@code tokens}, writing their keys and values
     * into the sequence's pages (allocating pages as needed) and keeping the logits of position {@code to - 1} for
     * {@link #sample}. {@code from} must equal {@link Sequence#length()}; afterwards the length is {@code to}.
     * It returns after one chunk, and no lock is held while it computes. A {@link Sequence#requestStop() stop}
     * requested before or during the call stops it at the next safe point: within eight work items of the layer's
     * projections or the output head in progress, before the next attention item, or at the next layer boundary.
     *
     * @throws KvPoolExhaustedException if the pool lacks the pages (nothing is computed or allocated)
     * @throws ComputeStoppedException  if the sequence's stop was requested: the chunk is discarded (the length
     *                                  stays {@code from}; pages allocated for it stay until {@link #free}); a stop
     *                                  requested before the call throws at layer 0 before anything is allocated
     */
    public void prefill(Sequence seq, int[] tokens, int from, int to) {
        requireActive(seq);
        Checks.requireArgument(from == seq.length, "chunk starts at %s but sequence %s has length %s", from, seq.id,
                seq.length);
        Checks.requireArgument(to > from && to <= tokens.length, "chunk [%s, %s) is empty or beyond the %s tokens",
                from, to, tokens.length);
        Checks.requireArgument(to - from <= options.maxChunkTokens(), "chunk of %s tokens exceeds maxChunkTokens %s",
                to - from, options.maxChunkTokens());
        Checks.requireArgument(to <= config.contextLength(), "chunk end %s exceeds the context length %s", to,
                config.contextLength());
        for (int i = from; i < to; i++) {
            requireToken(tokens[i]);
        }
        Checks.requireArgument(seq.cacheTokens == null || (to <= seq.cacheTokens.length
                        && Arrays.equals(tokens, from, to, seq.cacheTokens, from, to)),
                "sequence %s files its pages in the prefix cache: its chunks must be the prompt given to "
                        + "reusePrefix", seq.id);
        enter();
        try {
            if (options.safePoints() && seq.stopRequested()) {
                prefillStops.incrementAndGet();
                throw new ComputeStoppedException("prefill of sequence " + seq.id, 0, config.layers(), to - from);
            }
            ensureCapacity(seq, to);
            long start = System.nanoTime();
            LayerBoundaryListener listener = layerListener;
            Transformer.SafePoint safePoint = !options.safePoints() ? Transformer.SafePoint.NEVER
                    : new Transformer.SafePoint() {
                        @Override
                        public boolean stopBefore(int layer) {
                            boundary.setRelease(layer);
                            if (listener != null) {
                                listener.beforeLayer(layer);
                            }
                            return seq.stopRequested();
                        }

                        @Override
                        public boolean stopInside(int layer) {
                            if (listener != null) {
                                listener.insideLayer(layer);
                            }
                            return seq.stopRequested();
                        }
                    };
            int stoppedAt;
            try {
                stoppedAt = transformer.prefill(tokens, from, to, seq.pageTable, safePoint);
            } finally {
                boundary.setRelease(-1);
            }
            if (stoppedAt != Transformer.COMPLETED) {
                prefillNanos.addAndGet(System.nanoTime() - start);
                prefillStops.incrementAndGet();
                throw new ComputeStoppedException("prefill of sequence " + seq.id, stoppedAt, config.layers(),
                        to - from, transformer.stoppedInside());
            }
            seq.recordPrompt(tokens, from, to);
            transformer.copyLogits(0, seq.logits);
            seq.length = to;
            seq.pendingToken = -1;
            seq.hasLogits = true;
            cacheCompletePages(seq);
            prefillNanos.addAndGet(System.nanoTime() - start);
            prefillChunks.incrementAndGet();
            prefillTokens.addAndGet(to - from);
        } finally {
            exit();
        }
    }

    /**
     * Files the pages that the sequence's completed chunks filled, every layer written for every position, in the
     * prefix cache. A chunk that stopped never gets here: its pages are not complete.
     */
    private void cacheCompletePages(Sequence seq) {
        if (seq.cacheKeys == null) {
            return;
        }
        int pageTokens = layout.pageTokens();
        int complete = Math.min(seq.length / pageTokens, seq.cacheKeys.length);
        for (int i = seq.linkedPages; i < complete; i++) {
            KvPagePool.CachedPage parent = i == 0 ? null : seq.chain[i - 1];
            KvPagePool.CachedPage entry = i > 0 && parent == null ? null
                    : pagePool.store(seq.pageTable[i], seq.cacheKeys[i],
                            Arrays.copyOfRange(seq.cacheTokens, i * pageTokens, (i + 1) * pageTokens), parent);
            seq.chain[i] = entry;
            seq.linkedPages = i + 1;
        }
        pagePool.publish();
    }

    /**
     * Samples the next token from the sequence's latest logits (after a prefill chunk, or as done by
     * {@link #decodeStep}) with its {@link SamplingParams}, and makes it the token the next decode step feeds.
     * Each logits vector can be sampled once.
     */
    public int sample(Sequence seq) {
        requireActive(seq);
        Checks.requireState(seq.hasLogits, "sequence %s has no unsampled logits", seq.id);
        SamplingParams p = seq.sampling;
        int token = Sampler.sample(seq.logits, config.vocabSize(), p, seq.sampled, seq.promptIds, seq.promptIdCount,
                seq.outputIds, seq.outputIdCount);
        seq.recordOutput(token);
        seq.lastLogprobs = p.wantsLogprobs() ? TokenLogprobs.of(seq.logits, config.vocabSize(), token, p.logprobs())
                : null;
        seq.pendingToken = token;
        seq.sampled++;
        seq.hasLogits = false;
        return token;
    }

    /**
     * Makes {@code token} the token the next {@link #decodeStep} feeds for this sequence, replacing any sampled
     * one (forced or constrained decoding, or appending a known token after a prompt). Does not consume a random
     * draw.
     */
    public void setNextToken(Sequence seq, int token) {
        requireActive(seq);
        requireToken(token);
        Checks.requireState(seq.length > 0, "sequence %s is empty; prefill its prompt first", seq.id);
        seq.pendingToken = token;
        seq.hasLogits = false;
    }

    /**
     * Advances every sequence of {@code batch} by one token with batched matmuls: feeds each sequence's pending
     * token at position {@link Sequence#length()}, appends its KV, samples the next token (returned in batch
     * order and left pending) and increments the length. The batch's results equal those of stepping each
     * sequence alone.
     *
     * <p>Safe points: once every sequence of the batch has a {@link Sequence#requestStop() stop} requested, the step
     * stops at the next safe point: a layer boundary, or inside a layer or the output head before its next checked
     * work item ({@link ComputeStoppedException#inside()}). A sequence whose stop is requested while the others go
     * on leaves the step alone: none of its attention items not yet started runs (each is one sequence's key/value
     * head group over its whole context), nor its rows of any output-head item not yet started, nor its sampling;
     * its slot of the result is {@link #STOPPED}, and it stays as it was before the step (length, pending token,
     * logits, random draws; {@link Sequence#stoppedAtLayer()} says where it was left out). The projections, shared
     * by the batch's rows, and the element-wise steps still compute its row, so its keys and values for the step's
     * position may be written, in its own page past its length, which nothing reads before it is rewritten (a
     * sequence rewrites a position in every layer before attention reads it). The other sequences' logits and
     * tokens are bit for bit those of the step without the stop.
     *
     * @throws KvPoolExhaustedException if the pool lacks a page some sequence needs (nothing is computed)
     * @throws ComputeStoppedException  if every sequence's stop was requested: no sequence advanced (lengths,
     *                                  pending tokens and logits are as before; pages allocated for the step stay
     *                                  until {@link #free})
     */
    public int[] decodeStep(List<Sequence> batch) {
        int n = batch.size();
        Checks.requireArgument(n >= 1 && n <= options.maxBatch(), "batch of %s outside [1, maxBatch=%s]", n,
                options.maxBatch());
        Map<Sequence, Boolean> seen = new IdentityHashMap<>();
        for (Sequence s : batch) {
            requireActive(s);
            Checks.requireArgument(seen.put(s, Boolean.TRUE) == null, "sequence %s appears twice in the batch", s.id);
            Checks.requireState(s.pendingToken >= 0, "sequence %s has no pending token; sample or adopt first", s.id);
            Checks.requireState(s.length < config.contextLength(), "sequence %s is at the context length %s", s.id,
                    config.contextLength());
        }
        enter();
        try {
            allocateDecodePages(batch);
            long start = System.nanoTime();
            for (int r = 0; r < n; r++) {
                Sequence s = batch.get(r);
                batchTokens[r] = s.pendingToken;
                batchPositions[r] = s.length;
                batchTables[r] = s.pageTable;
            }
            int stoppedAt;
            if (options.safePoints()) {
                Arrays.fill(stepStoppedAt, 0, n, -1);
                stepBatch = batch;
                try {
                    stoppedAt = transformer.decode(n, batchTokens, batchPositions, batchTables, decodeSafePoint);
                } finally {
                    stepBatch = List.of();
                    boundary.setRelease(-1);
                }
            } else {
                stoppedAt = transformer.decode(n, batchTokens, batchPositions, batchTables,
                        Transformer.SafePoint.NEVER);
            }
            if (stoppedAt != Transformer.COMPLETED) {
                for (int r = 0; r < n; r++) {
                    batchTables[r] = null;
                }
                decodeNanos.addAndGet(System.nanoTime() - start);
                decodeStops.incrementAndGet();
                throw new ComputeStoppedException("decode step of " + n + " sequences", stoppedAt, config.layers(), n,
                        transformer.stoppedInside());
            }
            int[] next = new int[n];
            int advanced = 0;
            for (int r = 0; r < n; r++) {
                Sequence s = batch.get(r);
                batchTables[r] = null;
                // ── SAFE POINT, per sequence: one whose stop was requested during the step (its attention and
                //    head rows may have been skipped, so its logits are not whole) is not sampled and stays as it
                //    was before the step. ──
                if (options.safePoints() && s.stopRequested()) {
                    s.stoppedAtLayer = stepStoppedAt[r] < 0 ? config.layers() : stepStoppedAt[r];
                    next[r] = STOPPED;
                    continue;
                }
                transformer.copyLogits(r, s.logits);
                s.length++;
                s.hasLogits = true;
                next[r] = sample(s);
                advanced++;
            }
            decodeNanos.addAndGet(System.nanoTime() - start);
            decodeSteps.incrementAndGet();
            decodeTokens.addAndGet(advanced);
            return next;
        } finally {
            exit();
        }
    }

    /** Told about every layer boundary a forward reaches; see {@link #onLayerBoundary}. */
    @FunctionalInterface
    public interface LayerBoundaryListener {
        /**
         * The forward in progress is about to check its stop flags before layer {@code layer} ({@code layer ==
         * layers} is the boundary before the output head). Runs on the compute thread, between parallel regions.
         */
        void beforeLayer(int layer);

        /**
         * A forward is about to check its stop flags inside layer {@code layer}, before one of the layer's
         * projection or attention work items (every eighth item, item 0 of each region always; many calls per
         * layer). May run on any compute worker. A stop requested
         * here abandons the layer part way ({@link ComputeStoppedException#inside()}).
         */
        default void insideLayer(int layer) {
        }

        /**
         * A decode step is about to run work of sequence {@code row} of its batch alone: one of its attention items
         * in layer {@code layer}, or its rows of an output-head item ({@code layer == layers}), its stop check
         * having just passed. May run on any compute worker; for tests that count the work a stopped sequence
         * still gets. A stop requested here leaves the sequence out from its next item on.
         */
        default void rowItem(int layer, int row) {
        }
    }

    /**
     * Calls {@code listener} at every layer boundary of every forward, just before the stop check (null removes
     * it). For in-process tests that must request a stop at an exact layer of a chunk (the listener may call
     * {@link Sequence#requestStop()}, or deliver a cancel that does), and for tracing; it must be quick and must not
     * call the engine. Not called when {@link EngineOptions#safePoints()} is off.
     */
    public void onLayerBoundary(LayerBoundaryListener listener) {
        this.layerListener = listener;
    }

    /**
     * The layer boundary the forward in progress last reached (before layer {@code b}: {@code b}; before the output
     * head: {@code layers}), or -1 when none is running. Any thread; a snapshot for journals and diagnostics (a
     * cancel observed at boundary {@code b} and stopped at {@code m} cost {@code m - b} layers at most). Always -1
     * when {@link EngineOptions#safePoints()} is off.
     */
    public int forwardBoundary() {
        return boundary.getAcquire();
    }

    private static boolean allStopRequested(List<Sequence> batch) {
        for (int i = 0, n = batch.size(); i < n; i++) {
            if (!batch.get(i).stopRequested()) {
                return false;
            }
        }
        return true;
    }

    /** Gives every sequence whose next position starts a page that page; all or nothing. */
    private void allocateDecodePages(List<Sequence> batch) {
        int needed = 0;
        for (Sequence s : batch) {
            if (s.length >= s.capacity()) {
                needed++;
            }
        }
        if (needed == 0) {
            return;
        }
        int[] pages = new int[needed];
        pagePool.allocate(needed, pages);
        int i = 0;
        for (Sequence s : batch) {
            if (s.length >= s.capacity()) {
                s.addPage(pages[i++]);
            }
        }
    }

    /**
     * Runs throw-away prefill chunks and decode steps until the JIT has compiled the kernels, so real traffic
     * does not pay for it: until C2 compiles a kernel, the Vector API runs in its fallback form, tens of times
     * slower, and on a busy machine C2's queue can take tens of seconds to get there. Rounds (a 64-token prefill
     * and four decode steps) repeat until three in a row fail to beat the fastest round by 5%, after at least
     * five rounds, or until {@code budget} has passed. A service calls this once at startup, before reporting
     * ready. Frees everything it allocates (one page per 64 tokens of warm-up, briefly).
     *
     * @return the wall time spent, in nanoseconds
     */
    public long warmUp(Duration budget) {
        long start = System.nanoTime();
        long deadline = start + budget.toNanos();
        int tokens = Math.min(64, Math.min(options.maxChunkTokens(), config.contextLength() - 8));
        int[] prompt = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            prompt[i] = (i * 31 + 7) % config.vocabSize();
        }
        long best = Long.MAX_VALUE;
        int stale = 0;
        for (int round = 0; System.nanoTime() < deadline && (round < 5 || stale < 3); round++) {
            long roundStart = System.nanoTime();
            Sequence seq = newSequence(SamplingParams.greedy());
            try {
                prefill(seq, prompt, 0, tokens);
                sample(seq);
                for (int step = 0; step < 4 && seq.length < config.contextLength(); step++) {
                    decodeStep(List.of(seq));
                }
            } finally {
                free(seq);
            }
            long elapsed = System.nanoTime() - roundStart;
            stale = elapsed < best * 0.95 ? 0 : stale + 1;
            best = Math.min(best, elapsed);
        }
        return System.nanoTime() - start;
    }

    /** {@link #warmUp(Duration)} with a 30-second budget. */
    public long warmUp() {
        return warmUp(Duration.ofSeconds(30));
    }

    /** Copies the sequence's latest logits (from its last prefill chunk or decode step) into {@code dst}. */
    public void logits(Sequence seq, float[] dst) {
        requireOwned(seq);
        Checks.requireState(seq.logits != null, "sequence %s is %s: its logits are gone", seq.id, seq.state);
        Checks.requireArgument(dst.length >= config.vocabSize(), "dst holds %s floats, vocab is %s", dst.length,
                config.vocabSize());
        System.arraycopy(seq.logits, 0, dst, 0, config.vocabSize());
    }

    /** A copy of the sequence's latest logits. */
    public float[] logits(Sequence seq) {
        float[] copy = new float[config.vocabSize()];
        logits(seq, copy);
        return copy;
    }

    public EngineStats stats() {
        return new EngineStats(pagePool.pageCount(), pagePool.pagesLive(), pagePool.bytesLive(), live.size(),
                prefillChunks.get(), prefillTokens.get(), prefillNanos.get(),
                decodeSteps.get(), decodeTokens.get(), decodeNanos.get(), prefillStops.get(), decodeStops.get());
    }

    /** Sequences created and not yet freed. */
    public int sequencesLive() {
        return live.size();
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Stops the worker threads and releases all memory (weights, scratch, every KV page, live sequences
     * included), except a page pool supplied through {@link EngineOptions#kvPoolMemory()}: its supplier frees it,
     * once this has returned. Must not be called while a call is computing or another thread reads page segments. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        Checks.requireState(busy.compareAndSet(false, true), "engine %s closed while computing", engineId);
        closed = true;
        workers.close();
        arena.close();
        if (modelFile != null) {
            try {
                modelFile.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing the model file of engine " + engineId, e);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ checks

    private void enter() {
        requireOpen();
        Checks.requireState(busy.compareAndSet(false, true),
                "engine %s is used by two threads at once; it is single-caller", engineId);
        computeThread = Thread.currentThread();
    }

    private void exit() {
        busy.set(false);
    }

    private void requireOpen() {
        Checks.requireState(!closed, "engine %s is closed", engineId);
    }

    private void requireOwned(Sequence seq) {
        requireOpen();
        Checks.requireArgument(seq.owner == this, "sequence %s belongs to another engine", seq.id);
    }

    private void requireActive(Sequence seq) {
        requireOwned(seq);
        Checks.requireState(seq.state == SequenceState.ACTIVE, "sequence %s is %s, not ACTIVE", seq.id, seq.state);
    }

    private void requireToken(int token) {
        Checks.requireArgument(token >= 0 && token < config.vocabSize(), "token %s outside vocabulary of %s", token,
                config.vocabSize());
    }
}
