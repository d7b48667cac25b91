package dev.ripcord.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.engine.KvLayout;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.QuantizedDot;
import dev.ripcord.engine.kernel.Kernels;
import dev.ripcord.engine.kernel.QuantRows;
import dev.ripcord.engine.kernel.WorkerPool;
import dev.ripcord.format.gguf.GgmlType;

/**
 * The forward pass of a llama2.c-style decoder over a batch of <em>rows</em>: either one prefill chunk (rows are
 * consecutive positions of one sequence) or one decode step (one row per sequence).
 *
 * <p>Design note. Every layer is a short sequence of parallel regions on the {@link WorkerPool}: norm, the Q/K/V
 * projections as one GEMM region, rotary embedding plus the KV-page write, attention, the output projection,
 * norm, the W1/W3 projections as one region, SwiGLU and W2. All scratch is allocated once, sized for the largest
 * chunk and batch, so nothing allocates per token. GEMM work items are (panel of output features, block of rows)
 * and attention items are (key/value head, block of positions) or (sequence, key/value head); each output
 * element is computed entirely by one item in a fixed order, so results are identical for any thread count,
 * chunking or batching (see the kernel package note). Attention items group about 16 query rows that share a
 * key/value head, so each KV page is streamed once per 16 rows rather than once per row.
 *
 * <p>In the last layer of a prefill chunk only the last row's query, attention and MLP are computed: the other
 * rows' outputs would only feed logits nobody reads, while their keys and values are still written.
 *
 * <p>In a decode step a row can stop alone ({@link SafePoint#stopRow}): its attention items and its rows of the
 * output head's items are skipped, the work that is the row's own and grows with its context. The projections and
 * the element-wise steps still compute it: they are shared by the batch (each weight streamed once for all rows),
 * and leaving a row out would change their shapes and save little.
 *
 * <p>Not thread-safe: one forward at a time, from one thread (the engine enforces this).
 */
public final class Transformer {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Rows per GEMM work item: a block of activations and a panel of weights both stay in a 2 MiB L2. */
    private static final int ROW_BLOCK = 128;
    /**
     * Weight rows per work item of a quantized projection (except on dequantized panels, {@link QuantMatrix#PANEL}):
     * one decode step streams each weight row from memory once, and a 64-row item gives each of its two streams 32
     * consecutive rows; a prefill item's 64 dequantized rows against its input panels are the GEMM's 4×4 tiles.
     */
    static final int QUANT_ITEM_ROWS = 64;
    /** Floats per row of a prefill item's result tile: up to {@code ROW_BLOCK} input rows, plus one vector. */
    private static final int TILE_LD = 128 + 16;
    /**
     * A prefill item over rows up to this long dequantizes and multiplies them whole; longer rows go in chunks of
     * {@link #PREFILL_K_CHUNK} elements (a multiple of every block size), the GEMM carrying each output's FMA
     * chain from one chunk to the next. A 64-row item of 8192-element rows otherwise streams 2 MB of dequantized
     * weights and 2 MB of input panel per four-row tile, from beyond the core's L2: in the kernels alone, one
     * thread, 155 GFLOP/s whole against 210 in chunks of 512, where 2048-element rows ran 214 whole and 200 in
     * chunks. Through {@code model-bench}, 1B Q8_0 prefill of 512 tokens, chunked against whole in four
     * alternating pairs: 5–11 % faster.
     */
    public static final int PREFILL_WHOLE_ROW = 2048;
    static final int PREFILL_K_CHUNK = 512;
    /**
     * Inside a layer, a region's work items ask the safe point only every this many items (item 0 of every region
     * always): a check per item cost 3-5 % of prefill throughput at 64-token chunks in the CPU-time bench, every
     * eighth is within its noise, and eight items are well under a millisecond of compute on the {@code small}
     * preset (on a 1B model a prefill item over a quantized matrix, 64 weight rows × 128 input rows of 2048, is
     * about 0.2 ms of one thread, so eight are under 2 ms).
     */
    static final int CHECK_EVERY_ITEMS = 8;
    /** Element-wise work smaller than this many floats runs on the caller instead of waking the workers. */
    private static final long INLINE_FLOATS = 1 << 14;

    private static final int OP_ATT_NORM = 0;
    private static final int OP_ROPE_KV = 1;
    private static final int OP_FFN_NORM = 2;
    private static final int OP_SWIGLU = 3;
    private static final int OP_FINAL_NORM = 4;

    private final ModelConfig c;
    private final ModelWeights w;
    private final MemorySegment pool;
    private final Kernels kernels;
    /** The native decode kernels, which replace {@link Kernels#dotQ8} on the integer path; null where none run. */
    private final QuantRows quantRows;
    private final WorkerPool workers;
    private final int maxChunk;
    private final int maxBatch;
    private final int dim;
    private final int kvDim;
    private final int hidden;
    private final int hs;
    private final int heads;
    private final int kvHeads;
    private final int group;
    private final int vocab;
    private final int pt;
    private final long pageFloats;
    private final long layerFloats;
    private final long scoreStride;
    private final float attentionScale;
    /** Positions per prefill attention item: with the group's heads, about 16 query rows share each page read. */
    private final int prefillBlockTokens;
    /** Rows of the largest attention item (prefill or decode), in whole micro-tiles of four. */
    private final int maxAttentionRows;
    private final AttentionScratch[] attentionScratch;

    private final MemorySegment x;
    private final MemorySegment xb;
    private final MemorySegment xb2;
    private final MemorySegment q;
    private final MemorySegment k;
    private final MemorySegment v;
    private final MemorySegment hb;
    private final MemorySegment hb2;
    private final MemorySegment logits;
    private final MemorySegment scores;
    private final MemorySegment ropeCos;
    private final MemorySegment ropeSin;
    /**
     * Per worker: {@link #QUANT_ITEM_ROWS} dequantized weight rows of the widest input, then a prefill item's
     * result tile ({@code QUANT_ITEM_ROWS × TILE_LD} floats).
     */
    private final MemorySegment quantScratch;
    private final long quantScratchFloats;
    /**
     * A prefill region's input rows for its quantized projections, transposed into panels of 64 rows
     * ({@code [cols][64]} floats each, rows counted from {@link #panelFrom}), plus one vector of slack; null for a
     * model without quantized matrices.
     */
    private final MemorySegment inputPanels;
    private int panelFrom;
    /**
     * Which forwards multiply quantized projections as integer dot products with 8-bit activations
     * ({@link Kernels#dotQ8}, or {@link QuantRows} where native kernels run) rather than in floats
     * ({@link QuantizedDot}): {@code DECODE} (the default) for decode steps — on the Vector API kernels only over
     * the types without table kernels ({@link Kernels#tableDecode}) — where each weight is read once per step and
     * the integer kernel is the faster; {@code ALWAYS} for every type and prefill chunks too (measured slower: a
     * dequantized panel serves 128 rows of float FMAs, while the integer kernel scales per row); {@code NEVER},
     * floats everywhere, summed in one order (prefill on dequantized panels, slower than the default's transposed
     * GEMM).
     */
    private final boolean integerDot;
    private final boolean integerPrefill;
    /**
     * The current region's input rows quantized for the integer dot products: index 0 for weights in 32-element
     * blocks (Q8_0, Q4_0), 1 for 256-element blocks (Q4_K, Q6_K); null where the model has no such matrix.
     */
    private final MemorySegment[] quantActivations = new MemorySegment[2];

    private final int[] rowPos;
    private final int[][] rowTable;
    private int rows;
    private boolean prefillMode;

    private final MatmulRegion matmul = new MatmulRegion();
    private final AttentionRegion attention = new AttentionRegion();
    /** The forward's safe point, the layer it computes, and whether a region of that layer was abandoned. */
    private SafePoint safePoint = SafePoint.NEVER;
    private int layer;
    private volatile boolean abandoned;
    private boolean stoppedInside;
    private final RowRegion rowRegion = new RowRegion();

    /**
     * @param pool     the KV page pool's segment; page {@code p} starts at byte {@code p · layout.pageBytes()}
     * @param maxChunk the most rows a prefill chunk may have
     * @param maxBatch the most sequences a decode step may have
     * @param arena    owns all scratch memory (the engine's arena)
     */
    public Transformer(ModelWeights w, KvLayout layout, MemorySegment pool, Kernels kernels, QuantRows quantRows,
                       QuantizedDot dot, WorkerPool workers, int maxChunk, int maxBatch, Arena arena) {
        this.c = w.config;
        this.w = w;
        this.pool = pool;
        this.kernels = kernels;
        this.quantRows = quantRows;
        this.workers = workers;
        this.maxChunk = maxChunk;
        this.maxBatch = maxBatch;
        this.dim = c.dim();
        this.kvDim = c.kvDim();
        this.hidden = c.hiddenDim();
        this.hs = c.headSize();
        this.heads = c.heads();
        this.kvHeads = c.kvHeads();
        this.group = c.groupSize();
        this.vocab = c.vocabSize();
        this.pt = layout.pageTokens();
        this.pageFloats = layout.pageFloats();
        this.layerFloats = layout.layerFloats();
        this.attentionScale = (float) (1.0 / Math.sqrt(hs));
        int maxRows = Math.max(maxChunk, maxBatch);
        this.x = floats(arena, (long) maxRows * dim);
        this.xb = floats(arena, (long) maxRows * dim);
        this.xb2 = floats(arena, (long) maxRows * dim);
        this.q = floats(arena, (long) maxRows * dim);
        this.k = floats(arena, (long) maxRows * kvDim);
        this.v = floats(arena, (long) maxRows * kvDim);
        this.hb = floats(arena, (long) maxRows * hidden);
        this.hb2 = floats(arena, (long) maxRows * hidden);
        this.logits = floats(arena, (long) maxBatch * vocab);
        // One cache line beyond a multiple of 16 floats: the score rows of a tile must not alias in the caches.
        this.scoreStride = ((c.contextLength() + 15L) & ~15L) + 16;
        this.prefillBlockTokens = Math.max(4, (16 / group) & ~3);
        this.maxAttentionRows = 4 * Math.max(group * (prefillBlockTokens / 4), (group + 3) / 4);
        this.scores = floats(arena, (long) workers.size() * maxAttentionRows * scoreStride);
        this.attentionScratch = new AttentionScratch[workers.size()];
        for (int i = 0; i < workers.size(); i++) {
            attentionScratch[i] = new AttentionScratch(maxAttentionRows / 4);
        }
        this.quantScratchFloats = (long) QUANT_ITEM_ROWS * (Math.max(dim, hidden) + TILE_LD);
        this.quantScratch = w.quantized() ? floats(arena, workers.size() * quantScratchFloats) : null;
        this.inputPanels = w.quantized()
                ? floats(arena, (maxRows + 63L) / 64 * 64 * Math.max(dim, hidden) + 16) : null;
        this.integerDot = dot != QuantizedDot.NEVER;
        this.integerPrefill = dot == QuantizedDot.ALWAYS;
        if (integerDot) {
            long rowBytes = Kernels.activationRowBytes(Math.max(dim, hidden));
            for (Projection p : allProjections(w)) {
                if (p instanceof QuantMatrix qm && Kernels.hasIntegerDot(qm.tensor().type())) {
                    int family = qm.tensor().type().blockSize() == 32 ? 0 : 1;
                    if (quantActivations[family] == null) {
                        quantActivations[family] = arena.allocate(maxRows * rowBytes, 64);
                    }
                }
            }
        }
        this.ropeCos = floats(arena, (long) c.contextLength() * hs);
        this.ropeSin = floats(arena, (long) c.contextLength() * hs);
        fillRopeTables();
        this.rowPos = new int[maxRows];
        this.rowTable = new int[maxRows][];
    }

    private static java.util.List<Projection> allProjections(ModelWeights w) {
        java.util.List<Projection> all = new java.util.ArrayList<>();
        for (Projection[] layer : new Projection[][] {w.wq, w.wk, w.wv, w.wo, w.w1, w.w2, w.w3}) {
            all.addAll(java.util.Arrays.asList(layer));
        }
        all.add(w.classifier);
        return all;
    }

    private static MemorySegment floats(Arena arena, long n) {
        return arena.allocate(Math.max(1, n) * Float.BYTES, 64);
    }

    /**
     * {@code θ_j = pos / theta^(2j / headSize)} evaluated in double with StrictMath (so every JVM builds the same
     * table), stored as float in the interleaved form {@link Kernels#rope} takes. A model with scaled rotary
     * frequencies (linear scaling, Llama 3.1's factors) supplies its own {@code 1/θ_j}.
     */
    private void fillRopeTables() {
        double[] scaled = w.ropeInverseFrequencies;
        for (int pos = 0; pos < c.contextLength(); pos++) {
            for (int j = 0; j < hs / 2; j++) {
                double freq = scaled != null ? scaled[j] : 1.0 / StrictMath.pow(c.ropeTheta(), (2.0 * j) / hs);
                double angle = pos * freq;
                float cos = (float) StrictMath.cos(angle);
                float sin = (float) StrictMath.sin(angle);
                long i = (long) pos * hs + 2L * j;
                ropeCos.setAtIndex(F, i, cos);
                ropeCos.setAtIndex(F, i + 1, cos);
                ropeSin.setAtIndex(F, i, -sin);
                ropeSin.setAtIndex(F, i + 1, sin);
            }
        }
    }

    public int maxChunk() {
        return maxChunk;
    }

    public int maxBatch() {
        return maxBatch;
    }

    /**
     * Asked at every layer boundary of a forward whether to stop there: before each layer {@code l} (layers
     * {@code [0, l)} are done) and before the output head ({@code l = layers}). Runs on the calling thread,
     * between parallel regions (no worker is computing), so it must be quick: one acquire load of a flag.
     *
     * <p>{@link #stopInside} is asked inside layer {@code l}, before every {@value #CHECK_EVERY_ITEMS}th work item
     * of its projection regions (item 0 of each region always) and before every attention item, and inside the
     * output head ({@code l = layers}) before every {@value #CHECK_EVERY_ITEMS}th of its items, whether to abandon
     * the layer: once it says so, no worker takes another item, the region returns
     * when the items in progress are done, and the forward returns without starting another region (the layer's
     * keys and values may be partly written). Any compute worker may ask it, so it must be thread-safe and as
     * quick as {@link #stopBefore}. By default it never stops: such a safe point stops at boundaries only.
     */
    @FunctionalInterface
    public interface SafePoint {
        boolean stopBefore(int layer);

        /** Whether to abandon layer {@code layer} part way; see the interface note. */
        default boolean stopInside(int layer) {
            return false;
        }

        /**
         * Whether row {@code row} of a decode step (one sequence of the batch) is to get no more of the work that
         * is its own: asked before each of its attention items in layer {@code layer} and before its rows of each
         * output-head item ({@code layer = layers}); true skips that work for that row only. The shared
         * projections still compute every row (leaving a row out would change the matmuls' shapes, not their
         * cost: each weight is streamed once for the whole batch), and so do the element-wise steps, so the row's
         * keys and values for this position may still be written. Once true for a row it must stay true for the
         * rest of the forward. Never asked by a prefill chunk (its rows are one sequence: {@link #stopInside}).
         * Any compute worker may ask it; as quick as {@link #stopBefore}. By default no row stops.
         */
        default boolean stopRow(int layer, int row) {
            return false;
        }

        /** Never stops: the forward runs to its end. */
        SafePoint NEVER = layer -> false;
    }

    /** What {@link #prefill} and {@link #decode} return when the forward ran to its end. */
    public static final int COMPLETED = -1;

    /**
     * Runs positions {@code [from, to)} of one sequence, writing their keys and values into the pages of
     * {@code pageTable} (which must cover position {@code to - 1}) and leaving the logits of position
     * {@code to - 1} in logits row 0. Positions {@code [0, from)} must already be in the pages.
     *
     * @return {@link #COMPLETED}, or the layer boundary where {@code safePoint} stopped it: layers
     *         {@code [0, boundary)} wrote their keys and values for these positions, the others did not, and the
     *         logits are not computed; when {@link #stoppedInside()} says so, the layer it abandoned part way
     *         (layers {@code [0, layer)} done, layer {@code layer} partly: its keys and values for these positions
     *         may be partly written)
     */
    public int prefill(int[] tokens, int from, int to, int[] pageTable, SafePoint safePoint) {
        rows = to - from;
        prefillMode = true;
        for (int r = 0; r < rows; r++) {
            rowPos[r] = from + r;
            rowTable[r] = pageTable;
            embed(r, tokens[from + r]);
        }
        try {
            return forward(safePoint);
        } finally {
            this.safePoint = SafePoint.NEVER; // holds no caller's sequence between forwards
        }
    }

    /**
     * Runs one token for each of {@code n} sequences: row {@code r} feeds {@code tokens[r]} at position
     * {@code positions[r]} of the sequence whose pages are {@code pageTables[r]}; logits land in rows
     * {@code 0..n-1}.
     *
     * @return {@link #COMPLETED}, or the layer boundary where {@code safePoint} stopped it (as for
     *         {@link #prefill})
     */
    public int decode(int n, int[] tokens, int[] positions, int[][] pageTables, SafePoint safePoint) {
        rows = n;
        prefillMode = false;
        for (int r = 0; r < rows; r++) {
            rowPos[r] = positions[r];
            rowTable[r] = pageTables[r];
            embed(r, tokens[r]);
        }
        try {
            return forward(safePoint);
        } finally {
            this.safePoint = SafePoint.NEVER; // holds no caller's sequence between forwards
        }
    }

    /** Copies logits row {@code row} of the last forward into {@code dst[0..vocab)}. */
    public void copyLogits(int row, float[] dst) {
        MemorySegment.copy(logits, F, (long) row * vocab * Float.BYTES, dst, 0, vocab);
    }

    private void embed(int row, int token) {
        if (w.quantEmbedding != null) {
            var t = w.quantEmbedding.tensor();
            kernels.dequantize(t.type(), t.data(), t.rowOffset(token), dim, x, (long) row * dim);
            return;
        }
        if (w.embedding == null) {
            ((PackedMatrix) w.classifier).copyRow(token, x, (long) row * dim);
            return;
        }
        MemorySegment.copy(w.embedding, (long) token * dim * Float.BYTES, x, (long) row * dim * Float.BYTES,
                (long) dim * Float.BYTES);
    }

    /**
     * Whether the last forward that stopped abandoned a layer part way ({@link SafePoint#stopInside}) rather than
     * stopping at a boundary; its return value was then that layer.
     */
    public boolean stoppedInside() {
        return stoppedInside;
    }

    private int forward(SafePoint safePoint) {
        int last = rows - 1;
        this.safePoint = safePoint;
        stoppedInside = false;
        abandoned = false;
        for (int l = 0; l < c.layers(); l++) {
            // ── SAFE POINT: between layers no worker is computing and every page write of layer l - 1 is done. ──
            if (safePoint.stopBefore(l)) {
                return l;
            }
            layer = l;
            boolean trim = prefillMode && l == c.layers() - 1;
            int qFrom = trim ? last : 0;
            rowOp(OP_ATT_NORM, l, 0, rows, qFrom);
            matmul.begin();
            matmul.add(w.wq[l], xb, qFrom, dim, q, qFrom, dim, rows - qFrom);
            matmul.add(w.wk[l], xb, 0, dim, k, 0, kvDim, rows);
            matmul.add(w.wv[l], xb, 0, dim, v, 0, kvDim, rows);
            // ── SAFE POINTS inside the layer: each projection and attention item asks stopInside first; a region
            //    that was abandoned ends the forward (its workers are done: run() returned). ──
            if (matmul.run()) {
                return abandon(l);
            }
            rowOp(OP_ROPE_KV, l, 0, rows, qFrom);
            attention.begin(l, qFrom);
            workers.run(attention);
            if (abandoned) {
                return abandon(l);
            }
            matmul.begin();
            matmul.add(w.wo[l], xb, qFrom, dim, xb2, qFrom, dim, rows - qFrom);
            if (matmul.run()) {
                return abandon(l);
            }
            rowOp(OP_FFN_NORM, l, qFrom, rows, qFrom);
            matmul.begin();
            matmul.add(w.w1[l], xb, qFrom, dim, hb, qFrom, hidden, rows - qFrom);
            matmul.add(w.w3[l], xb, qFrom, dim, hb2, qFrom, hidden, rows - qFrom);
            if (matmul.run()) {
                return abandon(l);
            }
            rowOp(OP_SWIGLU, l, qFrom, rows, qFrom);
            matmul.begin();
            matmul.add(w.w2[l], hb, qFrom, hidden, xb2, qFrom, dim, rows - qFrom);
            if (matmul.run()) {
                return abandon(l);
            }
        }
        if (safePoint.stopBefore(c.layers())) {
            return c.layers();
        }
        // ── SAFE POINTS inside the output head: its items ask stopInside(layers) as a layer's do; abandoned, the
        //    logits are partial, and the caller discards the forward as for any stop. ──
        layer = c.layers();
        int outFrom = prefillMode ? last : 0;
        rowOp(OP_FINAL_NORM, 0, outFrom, rows, outFrom);
        matmul.begin();
        matmul.addHead(w.classifier, xb, outFrom, dim, logits, 0, vocab, rows - outFrom);
        if (matmul.run()) {
            return abandon(c.layers());
        }
        return COMPLETED;
    }

    private int abandon(int l) {
        stoppedInside = true;
        return l;
    }

    /**
     * An item of layer {@link #layer}'s region is about to start: whether the region is abandoned (already, or now
     * because {@link SafePoint#stopInside} says so). Any worker.
     */
    private boolean abandonItem(int item) {
        if ((item & (CHECK_EVERY_ITEMS - 1)) != 0) {
            return false;
        }
        return abandonNow();
    }

    /** {@link #abandonItem} without the spacing: asked before every item (attention's, each a long stream). */
    private boolean abandonNow() {
        if (abandoned) {
            return true;
        }
        if (safePoint.stopInside(layer)) {
            abandoned = true;
            return true;
        }
        return false;
    }

    private void rowOp(int op, int layer, int from, int to, int qFrom) {
        RowRegion region = rowRegion;
        region.op = op;
        region.layer = layer;
        region.from = from;
        region.to = to;
        region.qFrom = qFrom;
        long width = op == OP_SWIGLU ? hidden : dim;
        if ((to - from) * width < INLINE_FLOATS || workers.size() == 1) {
            region.run(0, 1);
        } else {
            workers.run(region);
        }
    }

    private void applyRow(int op, int layer, int r, int qFrom) {
        long xr = (long) r * dim;
        switch (op) {
            case OP_ATT_NORM -> {
                if (layer > 0) {
                    kernels.add(x, xr, xb2, xr, dim);
                }
                kernels.rmsnorm(xb, xr, x, xr, w.rmsAtt, (long) layer * dim, dim, c.normEps());
            }
            case OP_ROPE_KV -> ropeAndStore(layer, r, qFrom);
            case OP_FFN_NORM -> {
                kernels.add(x, xr, xb2, xr, dim);
                kernels.rmsnorm(xb, xr, x, xr, w.rmsFfn, (long) layer * dim, dim, c.normEps());
            }
            case OP_SWIGLU -> kernels.swiglu(hb, (long) r * hidden, hb2, (long) r * hidden, hidden);
            case OP_FINAL_NORM -> {
                kernels.add(x, xr, xb2, xr, dim);
                kernels.rmsnorm(xb, xr, x, xr, w.rmsFinal, 0, dim, c.normEps());
            }
            default -> throw new AssertionError(op);
        }
    }

    /**
     * Rotates this row's query and key, scales the query by {@code 1/sqrt(headSize)} (exact for power-of-two head
     * sizes, so scores equal llama2.c's {@code q·k / sqrt(headSize)}), then writes the key (transposed) and the
     * value into the row's KV page.
     */
    private void ropeAndStore(int layer, int r, int qFrom) {
        int pos = rowPos[r];
        long table = (long) pos * hs;
        long kr = (long) r * kvDim;
        if (w.bq != null) {
            if (r >= qFrom) {
                kernels.add(q, (long) r * dim, w.bq, (long) layer * dim, dim);
            }
            kernels.add(k, kr, w.bk, (long) layer * kvDim, kvDim);
            kernels.add(v, kr, w.bv, (long) layer * kvDim, kvDim);
        }
        if (r >= qFrom) {
            kernels.rope(q, (long) r * dim, heads, hs, ropeCos, ropeSin, table);
            kernels.scale(q, (long) r * dim, dim, attentionScale);
        }
        kernels.rope(k, kr, kvHeads, hs, ropeCos, ropeSin, table);
        int slot = pos % pt;
        long layerBase = rowTable[r][pos / pt] * pageFloats + layer * layerFloats;
        long valueBase = layerBase + (long) kvHeads * hs * pt;
        for (int g = 0; g < kvHeads; g++) {
            long keyBase = layerBase + (long) g * hs * pt + slot;
            for (int d = 0; d < hs; d++) {
                pool.setAtIndex(F, keyBase + (long) d * pt, k.getAtIndex(F, kr + (long) g * hs + d));
            }
            MemorySegment.copy(v, (kr + (long) g * hs) * Float.BYTES,
                    pool, (valueBase + ((long) g * pt + slot) * hs) * Float.BYTES, (long) hs * Float.BYTES);
        }
    }

    /**
     * Attention for one work item: {@code tiles} micro-tiles of up to four query rows that share a key/value
     * head and a sequence (whose pages are {@code table}). In micro-tile {@code t}, row {@code i} has its query
     * at {@code tileQ[t] + i·stride} in {@code q}, writes its output to {@code tileO[t] + i·stride} in {@code xb},
     * and attends to positions {@code [0, tileLen[t] + i·lenStep)}.
     *
     * <p>Pages are the outer loop: each page's key block and then value block is read once (from L3 at long
     * contexts) and reused from L1 by every micro-tile, instead of streaming the whole cache once per four rows.
     * Scores for a page come from one GEMM per micro-tile against the page's transposed keys; each row's softmax
     * numerators {@code exp(s - max)} and their sum are computed over exactly that row's positions; the weighted
     * sum of values is a GEMM over the positions every row of the item has, then single-row GEMMs over each
     * row's remaining positions, accumulating in position order, so each output is one FMA chain over
     * {@code [0, len)} whatever rows it was grouped with; finally each output row is divided by its sum.
     */
    private void attend(int worker, int layer, int kvHead, int[] table, int tiles, long stride, int lenStep) {
        AttentionScratch w = attentionScratch[worker];
        long sBase = (long) worker * maxAttentionRows * scoreStride;
        int maxLen = 0;
        int minLen = Integer.MAX_VALUE;
        for (int t = 0; t < tiles; t++) {
            maxLen = Math.max(maxLen, w.tileLen[t] + (w.tileRows[t] - 1) * lenStep);
            minLen = Math.min(minLen, w.tileLen[t]);
        }
        long keyBlock = layer * layerFloats + (long) kvHead * hs * pt;
        long valueBlock = layer * layerFloats + (long) kvHeads * hs * pt + (long) kvHead * pt * hs;
        for (int page = 0, p0 = 0; p0 < maxLen; page++, p0 += pt) {
            long keys = table[page] * pageFloats + keyBlock;
            for (int t = 0; t < tiles; t++) {
                int tileMax = w.tileLen[t] + (w.tileRows[t] - 1) * lenStep;
                if (tileMax > p0) {
                    // Whole vectors: slots past the length are inside the page (pt is a multiple of 16), unread.
                    int cols = Math.min(pt, (tileMax - p0 + 15) & ~15);
                    kernels.gemm(q, w.tileQ[t], stride, w.tileRows[t], hs, pool, keys, pt, cols,
                            scores, sBase + 4L * t * scoreStride + p0, scoreStride, false);
                }
            }
        }
        for (int t = 0; t < tiles; t++) {
            for (int i = 0; i < w.tileRows[t]; i++) {
                long row = sBase + (4L * t + i) * scoreStride;
                int len = w.tileLen[t] + i * lenStep;
                float max = kernels.max(scores, row, len);
                w.sums[4 * t + i] = kernels.expAndSum(scores, row, len, max);
            }
        }
        for (int page = 0, p0 = 0; p0 < minLen; page++, p0 += pt) {
            int count = Math.min(pt, minLen - p0);
            long values = table[page] * pageFloats + valueBlock;
            for (int t = 0; t < tiles; t++) {
                kernels.gemm(scores, sBase + 4L * t * scoreStride + p0, scoreStride, w.tileRows[t], count,
                        pool, values, hs, hs, xb, w.tileO[t], stride, page > 0);
            }
        }
        for (int t = 0; t < tiles; t++) {
            for (int i = 0; i < w.tileRows[t]; i++) {
                int len = w.tileLen[t] + i * lenStep;
                long scoreRow = sBase + (4L * t + i) * scoreStride;
                long out = w.tileO[t] + i * stride;
                for (int p = minLen; p < len; ) {
                    int page = p / pt;
                    int slot = p % pt;
                    int count = Math.min(pt - slot, len - p);
                    kernels.gemm(scores, scoreRow + p, scoreStride, 1, count,
                            pool, table[page] * pageFloats + valueBlock + (long) slot * hs, hs, hs,
                            xb, out, stride, true);
                    p += count;
                }
                kernels.divide(xb, out, hs, w.sums[4 * t + i]);
            }
        }
    }

    /** Per-worker description of the micro-tiles of the attention item being computed. */
    private static final class AttentionScratch {
        final long[] tileQ;
        final long[] tileO;
        final int[] tileRows;
        final int[] tileLen;
        final float[] sums;

        AttentionScratch(int maxTiles) {
            tileQ = new long[maxTiles];
            tileO = new long[maxTiles];
            tileRows = new int[maxTiles];
            tileLen = new int[maxTiles];
            sums = new float[4 * maxTiles];
        }
    }

    /** Element-wise work over rows, split into fixed contiguous ranges. */
    private final class RowRegion implements WorkerPool.Task {
        int op;
        int layer;
        int from;
        int to;
        int qFrom;

        @Override
        public void run(int worker, int workerCount) {
            int n = to - from;
            int end = from + WorkerPool.rangeStart(n, worker + 1, workerCount);
            for (int r = from + WorkerPool.rangeStart(n, worker, workerCount); r < end; r++) {
                applyRow(op, layer, r, qFrom);
            }
        }
    }

    /** Up to three projections over the same rows, as one pool of (job, panel, row block) items. */
    private final class MatmulRegion implements WorkerPool.Task {
        private final Projection[] m = new Projection[3];
        private final MemorySegment[] in = new MemorySegment[3];
        private final MemorySegment[] out = new MemorySegment[3];
        private final long[] inOff = new long[3];
        private final int[] inRow = new int[3];
        private final long[] inStride = new long[3];
        private final long[] outOff = new long[3];
        private final long[] outStride = new long[3];
        private final int[] count = new int[3];
        private final int[] blocks = new int[3];
        private final int[] itemEnd = new int[3];
        /** Per job over a quantized matrix: how its items are computed. */
        private final QuantPath[] path = new QuantPath[3];
        /** Per job: 0 or 1, the block family of its quantized activations on {@link QuantPath#INTEGER}, else -1. */
        private final int[] family = new int[3];
        /** Per job: whether it is a decode step's output head, whose rows are asked {@link SafePoint#stopRow}. */
        private final boolean[] rowChecked = new boolean[3];
        private final AtomicInteger next = new AtomicInteger();
        private int jobs;

        void begin() {
            jobs = 0;
        }

        /** {@code out[r] = W · in[r]} for rows {@code [row, row + n)}; strides in floats. */
        void add(Projection w, MemorySegment input, int row, long inputStride, MemorySegment output,
                 int outRow, long outputStride, int n) {
            add(w, input, row, inputStride, output, outRow, outputStride, n, false);
        }

        /** {@link #add} for the output head, whose path is a decode step's even in a prefill chunk. */
        void addHead(Projection w, MemorySegment input, int row, long inputStride, MemorySegment output,
                     int outRow, long outputStride, int n) {
            add(w, input, row, inputStride, output, outRow, outputStride, n, true);
        }

        private void add(Projection w, MemorySegment input, int row, long inputStride, MemorySegment output,
                         int outRow, long outputStride, int n, boolean head) {
            int j = jobs++;
            m[j] = w;
            in[j] = input;
            out[j] = output;
            inOff[j] = row * inputStride;
            inRow[j] = row;
            inStride[j] = inputStride;
            outOff[j] = outRow * outputStride;
            outStride[j] = outputStride;
            count[j] = n;
            rowChecked[j] = head && !prefillMode;
            blocks[j] = (n + ROW_BLOCK - 1) / ROW_BLOCK;
            path[j] = w instanceof QuantMatrix qm ? quantPath(qm, n, head) : null;
            family[j] = path[j] != QuantPath.INTEGER && path[j] != QuantPath.NATIVE ? -1
                    : ((QuantMatrix) w).tensor().type().blockSize() == 32 ? 0 : 1;
            int panels = path[j] != null && path[j] != QuantPath.PANELS
                    ? (w.rows() + QUANT_ITEM_ROWS - 1) / QUANT_ITEM_ROWS : w.panels();
            itemEnd[j] = (j == 0 ? 0 : itemEnd[j - 1]) + panels * blocks[j];
        }

        /** Runs the projections added since {@link #begin}; true if the region was abandoned (see SafePoint). */
        boolean run() {
            quantizeInputs();
            transposeInputs();
            next.set(0);
            workers.run(this);
            return abandoned;
        }

        /**
         * Quantizes, once per region, the input rows the jobs with integer kernels read: per block family, the
         * union of their rows (the jobs of a region share one input), in parallel over rows.
         */
        private void quantizeInputs() {
            for (int family = 0; family < 2; family++) {
                int from = Integer.MAX_VALUE;
                int to = 0;
                QuantizeRows task = quantizeRows;
                for (int j = 0; j < jobs; j++) {
                    if (this.family[j] == family) {
                        if (from != Integer.MAX_VALUE && (in[j] != task.input || inStride[j] != task.stride)) {
                            throw new IllegalStateException("the jobs of one matmul region must share their input");
                        }
                        task.input = in[j];
                        task.stride = inStride[j];
                        task.type = ((QuantMatrix) m[j]).tensor().type();
                        task.cols = m[j].cols();
                        from = Math.min(from, inRow[j]);
                        to = Math.max(to, inRow[j] + count[j]);
                    }
                }
                if (from < to) {
                    task.output = quantActivations[family];
                    task.from = from;
                    task.to = to;
                    if (to - from < 4) {
                        task.run(0, 1);
                    } else {
                        workers.run(task);
                    }
                }
            }
        }

        /**
         * Transposes, once per region, the input rows of the jobs on {@link QuantPath#TRANSPOSED} into
         * {@link #inputPanels}: the union of their rows (the jobs of a region share one input), in parallel.
         */
        private void transposeInputs() {
            int from = Integer.MAX_VALUE;
            int to = 0;
            TransposeRows task = transposeRows;
            for (int j = 0; j < jobs; j++) {
                if (path[j] == QuantPath.TRANSPOSED) {
                    if (from != Integer.MAX_VALUE && (in[j] != task.input || inStride[j] != task.stride
                            || m[j].cols() != task.cols)) {
                        throw new IllegalStateException("the jobs of one matmul region must share their input");
                    }
                    task.input = in[j];
                    task.stride = inStride[j];
                    task.cols = m[j].cols();
                    from = Math.min(from, inRow[j]);
                    to = Math.max(to, inRow[j] + count[j]);
                }
            }
            if (from < to) {
                panelFrom = from;
                task.from = from;
                task.to = to;
                if (to - from < 4) {
                    task.run(0, 1);
                } else {
                    workers.run(task);
                }
            }
        }

        @Override
        public void run(int worker, int workerCount) {
            int total = itemEnd[jobs - 1];
            int item;
            while ((item = next.getAndIncrement()) < total) {
                if (abandonItem(item)) {
                    return;
                }
                int j = 0;
                while (item >= itemEnd[j]) {
                    j++;
                }
                int local = item - (j == 0 ? 0 : itemEnd[j - 1]);
                int panel = local / blocks[j];
                int r0 = (local % blocks[j]) * ROW_BLOCK;
                int n = Math.min(ROW_BLOCK, count[j] - r0);
                if (!rowChecked[j]) {
                    compute(j, panel, worker, r0, n);
                    continue;
                }
                // A decode step's output head: each row of the item is asked once; the rows still wanted are
                // computed in runs of consecutive rows. Every output element is the same FMA chain whatever rows
                // it is computed with (the batch invariance), so the other rows' logits keep their bits.
                for (int s = 0; s < n; ) {
                    while (s < n && safePoint.stopRow(layer, inRow[j] + r0 + s)) {
                        s++;
                    }
                    int e = s;
                    while (e < n && !safePoint.stopRow(layer, inRow[j] + r0 + e)) {
                        e++;
                    }
                    if (e > s) {
                        compute(j, panel, worker, r0 + s, e - s);
                    }
                    s = e;
                }
            }
        }

        /** Rows {@code [r0, r0 + n)} of job {@code j}'s {@code panel}. */
        private void compute(int j, int panel, int worker, int r0, int n) {
            if (m[j] instanceof PackedMatrix w) {
                int width = w.panelCols(panel);
                kernels.gemm(in[j], inOff[j] + r0 * inStride[j], inStride[j], n, w.cols(),
                        w.data(), w.panelOffset(panel), width, width,
                        out[j], outOff[j] + r0 * outStride[j] + (long) panel * w.panelWidth(), outStride[j], false);
            } else {
                QuantMatrix qm = (QuantMatrix) m[j];
                long o = outOff[j] + r0 * outStride[j];
                switch (path[j]) {
                    case TABLE -> tableItem(qm, panel, in[j], inOff[j], out[j], outOff[j]);
                    case INTEGER -> integerItem(qm, panel, quantActivations[family[j]], inRow[j] + r0, n,
                            out[j], o, outStride[j]);
                    case NATIVE -> nativeItem(qm, panel, quantActivations[family[j]], inRow[j] + r0, n,
                            out[j], o, outStride[j]);
                    case TRANSPOSED -> transposedItem(qm, panel, worker, inRow[j] + r0, n, out[j], o,
                            outStride[j]);
                    case PANELS -> quantItem(qm, panel, worker, in[j], inOff[j] + r0 * inStride[j],
                            inStride[j], n, out[j], o, outStride[j]);
                }
            }
        }
    }

    /** How the work items of a projection over a quantized matrix are computed. */
    private enum QuantPath {
        /** One-row decode step of a {@link Kernels#tableDecode} type: {@link #tableItem}. */
        TABLE,
        /** Integer dot products against quantized activations: {@link #integerItem}. */
        INTEGER,
        /** {@link #INTEGER} on the native kernels: {@link #nativeItem}. */
        NATIVE,
        /** Prefill: dequantized rows times the transposed input panels on the GEMM: {@link #transposedItem}. */
        TRANSPOSED,
        /** Dequantized panels of {@link QuantMatrix#PANEL} rows and {@code dotProducts}: {@link #quantItem}. */
        PANELS
    }

    /**
     * The path of a job over {@code qm} with {@code n} input rows. Prefill chunks take {@link QuantPath#TRANSPOSED}
     * whatever their size (so any chunking gives the same bits), or the integer kernels with
     * {@link QuantizedDot#ALWAYS}, or with {@code never} dequantized panels: then prefill and
     * decode sum every product in the same order ({@code dotProducts}'), and prefilling a token equals decoding
     * it. Decode steps over a {@link Kernels#tableDecode} type stay on the float path — the table kernels for one
     * sequence, dequantized panels (the same values) for a batch, so a sequence decoded in a batch gets the bits
     * it gets alone — unless the property is {@code always}; other types take the integer kernels unless it is
     * {@code never}. The output head takes the decode policy in a prefill chunk too: there it computes one row,
     * the last prompt token's logits, whatever the chunking, and on the prefill path it would dequantize the whole
     * vocabulary matrix for that row (a tenth of a 128-token prefill on a 1B model). A policy of the weight type,
     * lane count, mode and role only, so the vector and scalar twins agree.
     */
    private QuantPath quantPath(QuantMatrix qm, int n, boolean head) {
        QuantPath path = vectorPath(qm, n, head);
        return path == QuantPath.INTEGER && quantRows != null ? QuantPath.NATIVE : path;
    }

    /**
     * The path on the Vector API kernels; with native kernels every integer job runs on them, and the table
     * kernels give way to them (integer decode steps, the faster there).
     */
    private QuantPath vectorPath(QuantMatrix qm, int n, boolean head) {
        GgmlType type = qm.tensor().type();
        boolean integer = Kernels.hasIntegerDot(type);
        if (prefillMode && !head) {
            return !integerDot ? QuantPath.PANELS
                    : integerPrefill && integer ? QuantPath.INTEGER : QuantPath.TRANSPOSED;
        }
        if (!integerPrefill && quantRows == null && Kernels.tableDecode(type, kernels.lanes())) {
            return n == 1 ? QuantPath.TABLE : QuantPath.PANELS;
        }
        return integerDot && integer ? QuantPath.INTEGER : QuantPath.PANELS;
    }

    private final TransposeRows transposeRows = new TransposeRows();

    /** Writes input rows {@code [from, to)} into {@link #inputPanels}, rows split over workers. */
    private final class TransposeRows implements WorkerPool.Task {
        MemorySegment input;
        long stride;
        int cols;
        int from;
        int to;

        @Override
        public void run(int worker, int workerCount) {
            int n = to - from;
            int end = from + WorkerPool.rangeStart(n, worker + 1, workerCount);
            for (int r = from + WorkerPool.rangeStart(n, worker, workerCount); r < end; r++) {
                int rel = r - from;
                long dst = (long) (rel / 64) * 64 * cols + rel % 64;
                long src = r * stride;
                for (int i = 0; i < cols; i++) {
                    inputPanels.setAtIndex(F, dst + 64L * i, input.getAtIndex(F, src + i));
                }
            }
        }
    }

    /**
     * One prefill work item of a quantized projection: dequantizes its {@link #QUANT_ITEM_ROWS} weight rows into
     * the worker's scratch and multiplies them with the GEMM against the item's {@code n} input rows (from row
     * {@code row}) in {@link #inputPanels}: the dequantized rows are the GEMM's A (one broadcast per weight), each
     * run of input rows inside one 64-row panel its B, widened to whole vectors (the extra columns compute values
     * nobody reads), into a result tile that is then copied, transposed, to the output. Each output element is
     * one FMA chain over the row in increasing order — what an F32 projection with the dequantized weights
     * computes — whatever the chunk, the item or the thread.
     */
    private void transposedItem(QuantMatrix qm, int panel, int worker, int row, int n, MemorySegment output,
                                long outOff, long outStride) {
        var t = qm.tensor();
        int j0 = panel * QUANT_ITEM_ROWS;
        int width = Math.min(QUANT_ITEM_ROWS, t.rows() - j0);
        int cols = t.cols();
        long rowsAt = worker * quantScratchFloats;
        long tileAt = rowsAt + (long) QUANT_ITEM_ROWS * (quantScratchFloats / QUANT_ITEM_ROWS - TILE_LD);
        int lanes = kernels.lanes();
        int chunk = cols <= PREFILL_WHOLE_ROW ? cols : PREFILL_K_CHUNK;
        long chunkBytes = (long) chunk / t.type().blockSize() * t.type().typeSize();
        for (int k0 = 0, c = 0; k0 < cols; k0 += chunk, c++) {
            int kc = Math.min(chunk, cols - k0);
            for (int i = 0; i < width; i++) {
                kernels.dequantize(t.type(), t.data(), t.rowOffset(j0 + i) + c * chunkBytes, kc, quantScratch,
                        rowsAt + (long) i * chunk);
            }
            for (int s = 0; s < n; ) {
                int rel = row + s - panelFrom;
                int col = rel % 64;
                int len = Math.min(64 - col, n - s);
                int padded = (len + lanes - 1) / lanes * lanes;
                kernels.gemm(quantScratch, rowsAt, chunk, width, kc,
                        inputPanels, (long) (rel / 64) * 64 * cols + (long) k0 * 64 + col, 64, padded,
                        quantScratch, tileAt + s, TILE_LD, k0 > 0);
                s += len;
            }
        }
        for (int r = 0; r < n; r++) {
            long o = outOff + r * outStride + j0;
            for (int i = 0; i < width; i++) {
                output.setAtIndex(F, o + i, quantScratch.getAtIndex(F, tileAt + (long) i * TILE_LD + r));
            }
        }
    }

    /**
     * One work item of a decode step on the table kernels: the {@link #QUANT_ITEM_ROWS} weight rows of {@code panel}
     * against one float input row, the panel's two halves side by side (two sequential streams in flight, as in
     * {@link #integerItem}). Each output is exactly {@code dotQuantized}, i.e. the dequantize path's value.
     */
    private void tableItem(QuantMatrix qm, int panel, MemorySegment input, long inOff, MemorySegment output,
                           long outOff) {
        var t = qm.tensor();
        int j0 = panel * QUANT_ITEM_ROWS;
        int width = Math.min(QUANT_ITEM_ROWS, t.rows() - j0);
        int half = width / 2;
        for (int i = 0; i < half; i++) {
            kernels.dotQuantizedPair(t.type(), t.data(), t.rowOffset(j0 + i), t.rowOffset(j0 + half + i), t.cols(),
                    input, inOff, output, outOff + j0 + i, outOff + j0 + half + i);
        }
        if ((width & 1) != 0) {
            output.setAtIndex(F, outOff + j0 + width - 1,
                    kernels.dotQuantized(t.type(), t.data(), t.rowOffset(j0 + width - 1), t.cols(), input, inOff));
        }
    }

    private final QuantizeRows quantizeRows = new QuantizeRows();

    /** Quantizes input rows {@code [from, to)} into row-indexed slots of {@code output}, rows split over workers. */
    private final class QuantizeRows implements WorkerPool.Task {
        MemorySegment input;
        long stride;
        GgmlType type;
        int cols;
        MemorySegment output;
        int from;
        int to;

        @Override
        public void run(int worker, int workerCount) {
            int n = to - from;
            int end = from + WorkerPool.rangeStart(n, worker + 1, workerCount);
            if (quantRows != null) {
                long rowBytes = QuantRows.activationRowBytes(cols);
                for (int r = from + WorkerPool.rangeStart(n, worker, workerCount); r < end; r++) {
                    QuantRows.quantize(type, input, r * stride, cols, output, r * rowBytes);
                }
                return;
            }
            long rowBytes = Kernels.activationRowBytes(cols);
            for (int r = from + WorkerPool.rangeStart(n, worker, workerCount); r < end; r++) {
                kernels.quantizeActivations(type, input, r * stride, cols, output, r * rowBytes);
            }
        }
    }

    /**
     * One work item of a quantized projection with integer kernels: each of its {@link QuantMatrix#PANEL} weight
     * rows against the item's {@code n} quantized input rows (from row {@code row} of {@code activations}), tiles
     * of four input rows reading each weight block once. Each output element is one {@code dotQ8} lane reduction
     * whatever the batch, chunk or thread count.
     */
    /**
     * One work item on the native kernels: the item's {@link #QUANT_ITEM_ROWS} weight rows against each of its
     * {@code n} quantized activation rows (from row {@code row}), one call per activation row (per weight row where
     * the file's rows are permuted). Each output is one row's dot product in {@link QuantRows}' definition, so
     * neither the item nor the batch changes a bit.
     */
    private void nativeItem(QuantMatrix qm, int panel, MemorySegment activations, int row, int n,
                            MemorySegment output, long outOff, long outStride) {
        var t = qm.tensor();
        int j0 = panel * QUANT_ITEM_ROWS;
        int width = Math.min(QUANT_ITEM_ROWS, t.rows() - j0);
        int cols = t.cols();
        long rowBytes = QuantRows.activationRowBytes(cols);
        for (int r = 0; r < n; r++) {
            long a = (row + r) * rowBytes;
            long o = outOff + r * outStride + j0;
            if (t.rowOrder() == null) {
                quantRows.rows(t.type(), t.data(), t.rowOffset(j0), t.rowBytes(), width, cols, activations, a,
                        output, o);
            } else {
                for (int i = 0; i < width; i++) {
                    quantRows.rows(t.type(), t.data(), t.rowOffset(j0 + i), t.rowBytes(), 1, cols, activations, a,
                            output, o + i);
                }
            }
        }
    }

    private void integerItem(QuantMatrix qm, int panel, MemorySegment activations, int row, int n,
                             MemorySegment output, long outOff, long outStride) {
        var t = qm.tensor();
        int j0 = panel * QUANT_ITEM_ROWS;
        int width = Math.min(QUANT_ITEM_ROWS, t.rows() - j0);
        int cols = t.cols();
        long rowBytes = Kernels.activationRowBytes(cols);
        if (n == 1) {
            // One activation row (a decode step of one sequence): the weights stream from memory once, so take
            // the panel's two halves side by side, two sequential streams in flight (see dotQ8Pair).
            int half = width / 2;
            long a = row * rowBytes;
            for (int i = 0; i < half; i++) {
                kernels.dotQ8Pair(t.type(), t.data(), t.rowOffset(j0 + i), t.rowOffset(j0 + half + i), cols,
                        activations, a, output, outOff + j0 + i, outOff + j0 + half + i);
            }
            if ((width & 1) != 0) {
                kernels.dotQ8(t.type(), t.data(), t.rowOffset(j0 + width - 1), cols, activations, a, rowBytes, 1,
                        output, outOff + j0 + width - 1, outStride);
            }
            return;
        }
        for (int i = 0; i < width; i++) {
            kernels.dotQ8(t.type(), t.data(), t.rowOffset(j0 + i), cols, activations, row * rowBytes, rowBytes, n,
                    output, outOff + j0 + i, outStride);
        }
    }

    /**
     * One work item of a quantized projection: dequantizes its {@link QuantMatrix#PANEL} weight rows into the
     * worker's scratch, then takes their dot products with {@code n} input rows. Each output element is one
     * {@code dotProducts} reduction over the same dequantized values whatever the batch, chunk or thread count.
     */
    private void quantItem(QuantMatrix qm, int panel, int worker, MemorySegment input, long inOff, long inStride,
                           int n, MemorySegment output, long outOff, long outStride) {
        var t = qm.tensor();
        int j0 = panel * QuantMatrix.PANEL;
        int width = Math.min(QuantMatrix.PANEL, t.rows() - j0);
        int cols = t.cols();
        if (n == 1 && (t.type() == GgmlType.Q8_0 || t.type() == GgmlType.Q4_0)) {
            // Decode of one sequence: each weight is read once, so skip the scratch (same result, see dotQuantized).
            for (int i = 0; i < width; i++) {
                output.setAtIndex(F, outOff + j0 + i,
                        kernels.dotQuantized(t.type(), t.data(), t.rowOffset(j0 + i), cols, input, inOff));
            }
            return;
        }
        long scratch = worker * quantScratchFloats;
        for (int i = 0; i < width; i++) {
            kernels.dequantize(t.type(), t.data(), t.rowOffset(j0 + i), cols, quantScratch, scratch + (long) i * cols);
        }
        kernels.dotProducts(input, inOff, inStride, n, cols, quantScratch, scratch, cols, width,
                output, outOff + j0, outStride);
    }

    /**
     * Prefill items are (key/value head, block of consecutive rows) covering every query head of the group, so an
     * item has {@link #maxAttentionRows} rows in micro-tiles of four positions of one head; the longest (last)
     * blocks go first. Decode items are (sequence, key/value head) with the group's query heads as rows.
     */
    private final class AttentionRegion implements WorkerPool.Task {
        private final AtomicInteger next = new AtomicInteger();
        private int layer;
        private int qFrom;
        private int blocks;
        private int items;

        void begin(int layer, int qFrom) {
            this.layer = layer;
            this.qFrom = qFrom;
            if (prefillMode) {
                blocks = (rows - qFrom + prefillBlockTokens - 1) / prefillBlockTokens;
                items = kvHeads * blocks;
            } else {
                items = rows * kvHeads;
            }
            next.set(0);
        }

        @Override
        public void run(int worker, int workerCount) {
            AttentionScratch w = attentionScratch[worker];
            int item;
            while ((item = next.getAndIncrement()) < items) {
                // Every item asks: an attention item streams a sequence's whole context (at 16K positions about a
                // megabyte of keys and values per head group), against which the check is nothing.
                if (abandonNow()) {
                    return;
                }
                if (prefillMode) {
                    int block = blocks - 1 - item / kvHeads;
                    int g = item % kvHeads;
                    int t0 = qFrom + block * prefillBlockTokens;
                    int tokens = Math.min(prefillBlockTokens, rows - t0);
                    int tiles = 0;
                    for (int h = g * group; h < (g + 1) * group; h++) {
                        for (int t = t0; t < t0 + tokens; t += 4) {
                            long off = (long) t * dim + (long) h * hs;
                            w.tileQ[tiles] = off;
                            w.tileO[tiles] = off;
                            w.tileRows[tiles] = Math.min(4, t0 + tokens - t);
                            w.tileLen[tiles] = rowPos[t] + 1;
                            tiles++;
                        }
                    }
                    attend(worker, layer, g, rowTable[t0], tiles, dim, 1);
                } else {
                    int r = item / kvHeads;
                    // A row whose sequence stopped reads no more of its context: its output stays what the norm
                    // left in xb (finite), and only its own logits, which nobody samples, depend on it.
                    if (safePoint.stopRow(layer, r)) {
                        continue;
                    }
                    int g = item % kvHeads;
                    int tiles = 0;
                    for (int h = g * group; h < (g + 1) * group; h += 4) {
                        long off = (long) r * dim + (long) h * hs;
                        w.tileQ[tiles] = off;
                        w.tileO[tiles] = off;
                        w.tileRows[tiles] = Math.min(4, (g + 1) * group - h);
                        w.tileLen[tiles] = rowPos[r] + 1;
                        tiles++;
                    }
                    attend(worker, layer, g, rowTable[r], tiles, hs, 0);
                }
            }
        }
    }
}
