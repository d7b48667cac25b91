package dev.ripcord.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A handle on one sequence's KV cache and sampling state inside an {@link InferenceEngine}.
 *
 * <p>The engine owns all mutation: a sequence is created by {@link InferenceEngine#newSequence} or
 * {@link InferenceEngine#reserve}, advanced by {@code prefill}/{@code sample}/{@code decodeStep}, and must be
 * released with {@link InferenceEngine#free} (its pages are otherwise leaked until the engine closes). Reading
 * accessors is safe from any thread but only meaningful when the scheduler thread is not mid-call.
 */
public final class Sequence {
    private static final VarHandle STOP;

    static {
        try {
            STOP = MethodHandles.lookup().findVarHandle(Sequence.class, "stop", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final long id;
    final InferenceEngine owner;
    final SamplingParams sampling;
    /** The latest logits; one of the engine's spare arrays while the sequence lives, null once freed. */
    float[] logits;
    SequenceState state;
    int length;
    int[] pageTable = new int[4];
    int pageCount;
    int pendingToken = -1;
    int sampled;
    boolean hasLogits;
    /** The prompt's token ids, kept only when the sampling reads them (repetition penalty). */
    int[] promptIds = new int[0];
    int promptIdCount;
    /** Tokens sampled (or adopted) so far, kept only when a penalty reads them. */
    int[] outputIds = new int[0];
    int outputIdCount;
    /** What the latest {@code sample} reported, when the sampling asks for logprobs. */
    TokenLogprobs lastLogprobs;
    /** The prompt whose complete pages this sequence files in the prefix cache, or null ({@code reusePrefix}). */
    int[] cacheTokens;
    /** The chained keys of {@link #cacheTokens}' complete pages. */
    long[] cacheKeys;
    /** The cache entry standing for the prefix up to the end of each page, or null where there is none. */
    KvPagePool.CachedPage[] chain;
    /** Pages whose cache linkage is settled (matched, stored, or known not to be cacheable). */
    int linkedPages;
    /** Prompt tokens taken from the prefix cache instead of computed. */
    int cachedTokens;
    /** Set (release) by {@link #requestStop()} from any thread, read (acquire) by the forward between layers. */
    @SuppressWarnings("unused") // through STOP
    private boolean stop;
    /** See {@link #stoppedAtLayer()}; written by the engine's decode step. */
    int stoppedAtLayer = -1;

    Sequence(long id, InferenceEngine owner, SamplingParams sampling, SequenceState state, float[] logits) {
        this.id = id;
        this.owner = owner;
        this.sampling = sampling;
        this.state = state;
        this.logits = logits;
    }

    public long id() {
        return id;
    }

    public SequenceState state() {
        return state;
    }

    /** Positions whose keys and values are in the cache (prompt plus fed tokens). */
    public int length() {
        return length;
    }

    /** Positions the sequence's pages can hold: {@code pageCount · pageTokens}. */
    public int capacity() {
        return pageCount * owner.kvLayout().pageTokens();
    }

    public int pageCount() {
        return pageCount;
    }

    /**
     * Leading pages of this sequence that stand in the prefix cache now or stood when they were linked (taken from it,
     * or stored by this sequence or an equal one once complete): what a worker logs as cached.
     */
    public int cachedPrefixPages() {
        int n = 0;
        while (chain != null && n < linkedPages && chain[n] != null) {
            n++;
        }
        return n;
    }

    /** Prompt tokens whose KV came from the prefix cache (0 when none did, or the cache was not asked). */
    public int cachedTokens() {
        return cachedTokens;
    }

    /** Pool index of the sequence's {@code i}-th page. */
    public int poolPage(int i) {
        Checks.requireArgument(i >= 0 && i < pageCount, "page %s of sequence %s outside [0, %s)", i, id, pageCount);
        return pageTable[i];
    }

    /** The token the next {@code decodeStep} will feed, or -1 if none has been sampled or adopted yet. */
    public int pendingToken() {
        return pendingToken;
    }

    /** Number of tokens sampled so far (also the index of the next random draw). */
    public int sampledTokens() {
        return sampled;
    }

    public SamplingParams sampling() {
        return sampling;
    }

    /**
     * The log-probabilities of the latest sampled (or adopted, when given) token, or null when its
     * {@link SamplingParams#wantsLogprobs()} is false.
     */
    public TokenLogprobs lastLogprobs() {
        return lastLogprobs;
    }

    /**
     * Asks the engine to stop computing for this sequence at the next safe point: a {@code prefill} of it in
     * progress (or the next one) throws {@link ComputeStoppedException} within eight work items of the layer in
     * progress (or at the next layer boundary), leaving the sequence as it was before that chunk; a decode step
     * stops the same way once every sequence of its batch has a stop requested, and otherwise leaves this one out
     * from its next attention item, output-head item or sampling on (it returns {@code InferenceEngine.STOPPED}
     * for it), leaving it as it was before the step. Safe from any thread, at any time, any number of times; never
     * undone. Costs the compute threads one acquire load per layer, per eighth projection work item, and per
     * attention item and output-head row of a decode step.
     */
    public void requestStop() {
        STOP.setRelease(this, true);
    }

    /** Whether {@link #requestStop()} was called (acquire: what the caller did before it is visible). */
    public boolean stopRequested() {
        return (boolean) STOP.getAcquire(this);
    }

    /**
     * Where the latest decode step that left this sequence out did so: the layer whose attention item it skipped
     * first, or the layer count for the output head or its sampling; -1 if no step has left it out. Engine loop.
     */
    public int stoppedAtLayer() {
        return stoppedAtLayer;
    }

    void recordPrompt(int[] tokens, int from, int to) {
        if (!sampling.readsPrompt()) {
            return;
        }
        if (promptIdCount + (to - from) > promptIds.length) {
            promptIds = Arrays.copyOf(promptIds, Math.max(promptIdCount + (to - from), promptIds.length * 2));
        }
        System.arraycopy(tokens, from, promptIds, promptIdCount, to - from);
        promptIdCount += to - from;
    }

    void recordOutput(int token) {
        if (!sampling.penalizes()) {
            return;
        }
        if (outputIdCount == outputIds.length) {
            outputIds = Arrays.copyOf(outputIds, Math.max(16, outputIds.length * 2));
        }
        outputIds[outputIdCount++] = token;
    }

    /**
     * The sequence's pages in order; page {@code i} holds positions {@code [i·pageTokens, (i+1)·pageTokens)}. The
     * segments stay valid until the sequence is freed.
     */
    public List<KvPage> pages() {
        KvPagePool pool = owner.pagePool();
        List<KvPage> pages = new ArrayList<>(pageCount);
        for (int i = 0; i < pageCount; i++) {
            int p = pageTable[i];
            pages.add(new KvPage(i, p, pool.offsetOf(p), pool.pageBytes(), pool.page(p)));
        }
        return List.copyOf(pages);
    }

    void addPage(int poolPage) {
        if (pageCount == pageTable.length) {
            pageTable = Arrays.copyOf(pageTable, pageTable.length * 2);
        }
        pageTable[pageCount++] = poolPage;
    }

    @Override
    public String toString() {
        return "Sequence[id=%d, state=%s, length=%d, pages=%d]".formatted(id, state, length, pageCount);
    }
}
