package dev.ripcord.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.weights.Tensor;
import dev.ripcord.engine.weights.WeightSource;

/**
 * A model's weights in engine memory: projections packed for the GEMM kernel, vectors (norm weights) and the
 * embedding table row-major. All segments belong to the arena passed to {@link #load}.
 */
public final class ModelWeights {
    final ModelConfig config;
    final MemorySegment embedding;
    final MemorySegment rmsAtt;
    final MemorySegment rmsFfn;
    final MemorySegment rmsFinal;
    final PackedMatrix[] wq;
    final PackedMatrix[] wk;
    final PackedMatrix[] wv;
    final PackedMatrix[] wo;
    final PackedMatrix[] w1;
    final PackedMatrix[] w2;
    final PackedMatrix[] w3;
    final PackedMatrix classifier;

    private ModelWeights(ModelConfig config, MemorySegment embedding, MemorySegment rmsAtt, MemorySegment rmsFfn,
                         MemorySegment rmsFinal, PackedMatrix[][] projections, PackedMatrix classifier) {
        this.config = config;
        this.embedding = embedding;
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
    }

    /** Reads every tensor of {@code source} once and repacks it into {@code arena}. */
    public static ModelWeights load(WeightSource source, int panelWidth, Arena arena) {
        ModelConfig c = source.config();
        long largest = 0;
        for (Tensor t : Tensor.values()) {
            largest = Math.max(largest, t.size(c));
        }
        // The row-major staging buffer is only needed during loading: a confined arena of its own frees it.
        try (Arena staging = Arena.ofConfined()) {
            MemorySegment buffer = staging.allocate(largest * Float.BYTES, 64);
            MemorySegment embedding = copy(source, Tensor.TOKEN_EMBEDDING, 0, buffer, arena);
            MemorySegment rmsAtt = arena.allocate((long) c.layers() * c.dim() * Float.BYTES, 64);
            MemorySegment rmsFfn = arena.allocate((long) c.layers() * c.dim() * Float.BYTES, 64);
            long dimBytes = (long) c.dim() * Float.BYTES;
            for (int l = 0; l < c.layers(); l++) {
                source.read(Tensor.RMS_ATT, l, buffer);
                MemorySegment.copy(buffer, 0, rmsAtt, l * dimBytes, dimBytes);
                source.read(Tensor.RMS_FFN, l, buffer);
                MemorySegment.copy(buffer, 0, rmsFfn, l * dimBytes, dimBytes);
            }
            MemorySegment rmsFinal = copy(source, Tensor.RMS_FINAL, 0, buffer, arena);
            Tensor[] order = {Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO, Tensor.W1, Tensor.W2, Tensor.W3};
            PackedMatrix[][] projections = new PackedMatrix[order.length][c.layers()];
            for (int i = 0; i < order.length; i++) {
                for (int l = 0; l < c.layers(); l++) {
                    projections[i][l] = packed(source, order[i], l, buffer, panelWidth, arena);
                }
            }
            PackedMatrix classifier = packed(source, Tensor.CLASSIFIER, 0, buffer, panelWidth, arena);
            return new ModelWeights(c, embedding, rmsAtt, rmsFfn, rmsFinal, projections, classifier);
        }
    }

    private static MemorySegment copy(WeightSource source, Tensor t, int layer, MemorySegment buffer, Arena arena) {
        long bytes = t.size(source.config()) * Float.BYTES;
        source.read(t, layer, buffer);
        MemorySegment out = arena.allocate(bytes, 64);
        MemorySegment.copy(buffer, 0, out, 0, bytes);
        return out;
    }

    private static PackedMatrix packed(WeightSource source, Tensor t, int layer, MemorySegment buffer,
                                       int panelWidth, Arena arena) {
        ModelConfig c = source.config();
        source.read(t, layer, buffer);
        return PackedMatrix.pack(buffer, t.rows(c), t.cols(c), panelWidth, arena);
    }

    public ModelConfig config() {
        return config;
    }
}
