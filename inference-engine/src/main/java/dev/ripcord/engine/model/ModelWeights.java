package dev.ripcord.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.weights.StoredTensor;
import dev.ripcord.engine.weights.Tensor;
import dev.ripcord.engine.weights.WeightSource;

/**
 * A model's weights in engine memory: projections packed for the GEMM kernel (or, for block-quantized files, views
 * of the mapped file: {@link QuantMatrix}), vectors (norm weights, biases) and the embedding table row-major (or
 * quantized in place). All engine-owned segments belong to the arena passed to {@link #load}; quantized views
 * belong to the source's mapping, which must outlive these weights.
 */
public final class ModelWeights {
    final ModelConfig config;
    /**
     * F32 embedding rows, or null when {@link #quantEmbedding} is set or the rows are read from the shared
     * {@link #classifier} (a {@link PackedMatrix}).
     */
    final MemorySegment embedding;
    final QuantMatrix quantEmbedding;
    final MemorySegment rmsAtt;
    final MemorySegment rmsFfn;
    final MemorySegment rmsFinal;
    final Projection[] wq;
    final Projection[] wk;
    final Projection[] wv;
    final Projection[] wo;
    final Projection[] w1;
    final Projection[] w2;
    final Projection[] w3;
    final Projection classifier;
    /** Per-layer Q/K/V biases ({@code [layers][dim]}, {@code [layers][kvDim]}), or null (no biases). */
    final MemorySegment bq;
    final MemorySegment bk;
    final MemorySegment bv;
    /** Scaled inverse rotary frequencies, or null for the plain ones. */
    final double[] ropeInverseFrequencies;

    private ModelWeights(ModelConfig config, MemorySegment embedding, QuantMatrix quantEmbedding, MemorySegment rmsAtt,
                         MemorySegment rmsFfn, MemorySegment rmsFinal, Projection[][] projections, Projection classifier,
                         MemorySegment[] biases, double[] ropeInverseFrequencies) {
        this.config = config;
        this.embedding = embedding;
        this.quantEmbedding = quantEmbedding;
        this.rmsAtt = rmsAtt;
        this.rmsFfn = rmsFfn;
        this.rmsFinal = rmsFinal;
        this.wq = projections[0];
        this.wk = projections[1];
        this.wv = projections[2];
        this.wo = projections[3];
        this.w1 = projections[4];
        this.w2 = projections[5];
        this.w3 = projections[6];
        this.classifier = classifier;
        this.bq = biases == null ? null : biases[0];
        this.bk = biases == null ? null : biases[1];
        this.bv = biases == null ? null : biases[2];
        this.ropeInverseFrequencies = ropeInverseFrequencies;
    }

    /**
     * Reads every tensor of {@code source} once: F32 (and widened F16/BF16) matrices are repacked into
     * {@code arena}; matrices the source {@linkplain WeightSource#stored stores} in a block format stay where they
     * are.
     */
    public static ModelWeights load(WeightSource source, int panelWidth, Arena arena) {
        return load(source, panelWidth, new Store() {
            @Override
            public MemorySegment allocate(long bytes) {
                return arena.allocate(bytes, ALIGNMENT);
            }

            @Override
            public boolean filled() {
                return false;
            }
        });
    }

    /** Where a load puts the weights the engine owns, in the order {@link #load(WeightSource, int, Store)} asks. */
    interface Store {
        /** {@code bytes} of memory, {@value #ALIGNMENT}-byte aligned. */
        MemorySegment allocate(long bytes);

        /**
         * True when the memory {@link #allocate} hands out already holds the weights (a mapped
         * {@link WeightCache} image, or a sizing pass whose segments are null): the load then reads nothing.
         */
        boolean filled();
    }

    /** Alignment of every segment a {@link Store} hands out. */
    static final int ALIGNMENT = 64;

    /**
     * The load behind {@link #load(WeightSource, int, Arena)}: the same allocations in the same order whatever the
     * store, so that an image written by one load is read back, segment by segment, by another.
     */
    static ModelWeights load(WeightSource source, int panelWidth, Store store) {
        ModelConfig c = source.config();
        long largest = 0;
        for (Tensor t : Tensor.values()) {
            largest = Math.max(largest, t.size(c));
        }
        boolean fill = !store.filled();
        // The row-major staging buffer is only needed during loading: a confined arena of its own frees it.
        try (Arena staging = Arena.ofConfined()) {
            MemorySegment buffer = fill ? staging.allocate(largest * Float.BYTES, ALIGNMENT) : null;
            Optional<StoredTensor> storedEmbedding = source.stored(Tensor.TOKEN_EMBEDDING, 0);
            QuantMatrix quantEmbedding = storedEmbedding.map(QuantMatrix::new).orElse(null);
            // A classifier shared with the embedding is packed anyway; its rows are the embedding's, so no second
            // copy of the table is kept (for stories15M, 37 MB of a 61 MB model).
            boolean embedFromClassifier = quantEmbedding == null && c.sharedClassifier()
                    && source.stored(Tensor.CLASSIFIER, 0).isEmpty();
            MemorySegment embedding = quantEmbedding != null || embedFromClassifier ? null
                    : copy(source, Tensor.TOKEN_EMBEDDING, 0, buffer, store);
            MemorySegment rmsAtt = store.allocate((long) c.layers() * c.dim() * Float.BYTES);
            MemorySegment rmsFfn = store.allocate((long) c.layers() * c.dim() * Float.BYTES);
            long dimBytes = (long) c.dim() * Float.BYTES;
            for (int l = 0; fill && l < c.layers(); l++) {
                source.read(Tensor.RMS_ATT, l, buffer);
                MemorySegment.copy(buffer, 0, rmsAtt, l * dimBytes, dimBytes);
                source.read(Tensor.RMS_FFN, l, buffer);
                MemorySegment.copy(buffer, 0, rmsFfn, l * dimBytes, dimBytes);
            }
            MemorySegment rmsFinal = copy(source, Tensor.RMS_FINAL, 0, buffer, store);
            Tensor[] order = {Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO, Tensor.W1, Tensor.W2, Tensor.W3};
            Projection[][] projections = new Projection[order.length][c.layers()];
            for (int i = 0; i < order.length; i++) {
                for (int l = 0; l < c.layers(); l++) {
                    projections[i][l] = projection(source, order[i], l, buffer, panelWidth, store);
                }
            }
            Projection classifier = projection(source, Tensor.CLASSIFIER, 0, buffer, panelWidth, store);
            MemorySegment[] biases = null;
            if (source.bias(Tensor.WQ, 0).isPresent()) {
                biases = new MemorySegment[3];
                Tensor[] qkv = {Tensor.WQ, Tensor.WK, Tensor.WV};
                for (int i = 0; i < 3; i++) {
                    int n = qkv[i].rows(c);
                    biases[i] = store.allocate((long) c.layers() * n * Float.BYTES);
                    for (int l = 0; fill && l < c.layers(); l++) {
                        float[] b = source.bias(qkv[i], l).orElseThrow();
                        MemorySegment.copy(MemorySegment.ofArray(b), 0, biases[i], (long) l * n * Float.BYTES,
                                (long) n * Float.BYTES);
                    }
                }
            }
            return new ModelWeights(c, embedding, quantEmbedding, rmsAtt, rmsFfn, rmsFinal, projections, classifier,
                    biases, source.ropeInverseFrequencies().orElse(null));
        }
    }

    private static MemorySegment copy(WeightSource source, Tensor t, int layer, MemorySegment buffer, Store store) {
        long bytes = t.size(source.config()) * Float.BYTES;
        MemorySegment out = store.allocate(bytes);
        if (!store.filled()) {
            source.read(t, layer, buffer);
            MemorySegment.copy(buffer, 0, out, 0, bytes);
        }
        return out;
    }

    private static Projection projection(WeightSource source, Tensor t, int layer, MemorySegment buffer,
                                         int panelWidth, Store store) {
        Optional<StoredTensor> stored = source.stored(t, layer);
        if (stored.isPresent()) {
            return new QuantMatrix(stored.get());
        }
        ModelConfig c = source.config();
        int rows = t.rows(c);
        int cols = t.cols(c);
        MemorySegment data = store.allocate(PackedMatrix.bytes(rows, cols));
        if (store.filled()) {
            return new PackedMatrix(data, rows, cols, panelWidth);
        }
        source.read(t, layer, buffer);
        return PackedMatrix.packInto(buffer, rows, cols, panelWidth, data);
    }

    public ModelConfig config() {
        return config;
    }

    /**
     * Bytes of the block-quantized matrices used in place from the model file's mapping (each counted once: a tied
     * classifier is the embedding), 0 when there are none.
     */
    public long quantizedBytes() {
        Set<Long> seen = new HashSet<>();
        List<Projection> all = new ArrayList<>(List.of(classifier));
        if (quantEmbedding != null) {
            all.add(quantEmbedding);
        }
        for (Projection[] layerMatrices : new Projection[][] {wq, wk, wv, wo, w1, w2, w3}) {
            all.addAll(Arrays.asList(layerMatrices));
        }
        long bytes = 0;
        for (Projection p : all) {
            if (p instanceof QuantMatrix q && seen.add(q.tensor().data().address())) {
                bytes += q.tensor().data().byteSize();
            }
        }
        return bytes;
    }

    /** True when some matrix is used in place in a block format. */
    public boolean quantized() {
        return quantEmbedding != null || classifier instanceof QuantMatrix || wq[0] instanceof QuantMatrix;
    }
}
