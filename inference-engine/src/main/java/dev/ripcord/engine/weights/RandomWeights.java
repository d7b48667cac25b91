package dev.ripcord.engine.weights;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.engine.ModelConfig;

/**
 * Deterministic random weights: element {@code i} of tensor {@code (t, layer)} is a pure function of
 * {@code (seed, t, layer, i)} computed with integer hashing and exact float scaling, so two processes (a prefill
 * worker and a decode worker) built from the same config and seed hold bit-identical weights without downloading
 * anything.
 *
 * <p>Scales keep activations near unit variance: projections draw from {@code U(-a, a)} with
 * {@code a = sqrt(3 / fanIn)}, norm weights from {@code 1 ± 0.1}, and the embedding (also the classifier when
 * shared) from {@code U(-sqrt(12 / dim), +)}, which gives logits a standard deviation of about 2.
 */
public final class RandomWeights implements WeightSource {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private final ModelConfig config;
    private final long seed;
    private final String name;

    public RandomWeights(ModelConfig config, long seed, String name) {
        this.config = config;
        this.seed = seed;
        this.name = name;
    }

    @Override
    public ModelConfig config() {
        return config;
    }

    @Override
    public String describe() {
        return "random weights (" + name + ", seed " + seed + ")";
    }

    @Override
    public void read(Tensor tensor, int layer, MemorySegment dst) {
        Tensor source = tensor == Tensor.CLASSIFIER && config.sharedClassifier() ? Tensor.TOKEN_EMBEDDING : tensor;
        int sourceLayer = source.perLayer() ? layer : 0;
        long key = mix64(seed ^ mix64((source.ordinal() + 1L) * 1_000_003L + sourceLayer));
        long n = source.size(config);
        boolean norm = source == Tensor.RMS_ATT || source == Tensor.RMS_FFN || source == Tensor.RMS_FINAL;
        float scale = scale(source);
        for (long i = 0; i < n; i++) {
            float u = uniform(key, i); // in [-1, 1)
            dst.set(F, i << 2, norm ? 1.0f + 0.1f * u : scale * u);
        }
    }

    private float scale(Tensor t) {
        return switch (t) {
            case TOKEN_EMBEDDING, CLASSIFIER -> (float) Math.sqrt(12.0 / config.dim());
            case W2 -> (float) Math.sqrt(3.0 / config.hiddenDim());
            default -> (float) Math.sqrt(3.0 / config.dim());
        };
    }

    /** A float in [-1, 1) on a 2^-23 grid: every step is exact, so the value is the same on any JVM. */
    static float uniform(long key, long index) {
        long bits = mix64(key + index * GOLDEN);
        return (bits >>> 40) * 0x1.0p-23f - 1.0f;
    }

    /** SplitMix64's finaliser. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
