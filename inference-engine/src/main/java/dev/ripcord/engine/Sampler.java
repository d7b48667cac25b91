package dev.ripcord.engine;

import java.util.Arrays;

/**
 * Token selection from logits. Scalar and in double precision with {@link StrictMath#exp}, so the same logits,
 * parameters and draw index give the same token on any JVM. Allocates a little per call; it runs once per token.
 */
final class Sampler {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private Sampler() {
    }

    static int sample(float[] logits, int vocab, SamplingParams params, long draw) {
        if (params.isGreedy()) {
            return argmax(logits, vocab);
        }
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            max = Math.max(max, logits[i]);
        }
        double[] probs = new double[vocab];
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            probs[i] = StrictMath.exp((logits[i] - max) / (double) params.temperature());
            sum += probs[i];
        }
        double u = uniform(params.seed(), draw);
        if (params.topP() >= 1f) {
            double target = u * sum;
            double cumulative = 0;
            for (int i = 0; i < vocab; i++) {
                cumulative += probs[i];
                if (target < cumulative) {
                    return i;
                }
            }
            return lastNonZero(probs);
        }
        return nucleus(probs, sum, params.topP(), u);
    }

    /** Samples among the most likely tokens whose mass reaches {@code topP}; order: probability desc, id asc. */
    private static int nucleus(double[] probs, double sum, float topP, double u) {
        int n = probs.length;
        // Tokens below (1 - topP) / (n - 1) of the mass can never be in the nucleus (llama2.c's pre-filter).
        double cutoff = n > 1 ? (1.0 - topP) / (n - 1) * sum : 0;
        long[] keys = new long[n];
        int candidates = 0;
        for (int i = 0; i < n; i++) {
            if (probs[i] >= cutoff) {
                int bits = Float.floatToIntBits((float) (probs[i] / sum));
                keys[candidates++] = ((long) (Integer.MAX_VALUE - bits) << 32) | i;
            }
        }
        Arrays.sort(keys, 0, candidates);
        double limit = topP * sum;
        double cumulative = 0;
        int last = candidates - 1;
        for (int c = 0; c < candidates; c++) {
            cumulative += probs[(int) keys[c]];
            if (cumulative >= limit) {
                last = c;
                break;
            }
        }
        double target = u * cumulative;
        double running = 0;
        for (int c = 0; c <= last; c++) {
            running += probs[(int) keys[c]];
            if (target < running) {
                return (int) keys[c];
            }
        }
        return (int) keys[last];
    }

    static int argmax(float[] logits, int vocab) {
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    private static int lastNonZero(double[] probs) {
        for (int i = probs.length - 1; i > 0; i--) {
            if (probs[i] > 0) {
                return i;
            }
        }
        return 0;
    }

    /** The {@code draw}-th uniform double in [0, 1) of {@code seed}. */
    static double uniform(long seed, long draw) {
        long z = seed + (draw + 1) * GOLDEN;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (z >>> 11) * 0x1.0p-53;
    }
}
