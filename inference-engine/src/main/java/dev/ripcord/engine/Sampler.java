package dev.ripcord.engine;

import java.util.Arrays;

/**
 * Token selection from logits. Scalar and in double precision with {@link StrictMath#exp}, so the same logits,
 * parameters and draw index give the same token on any JVM.
 *
 * <p>Runs once per token, on every sequence of a decode step: its vocabulary-sized working arrays (probabilities,
 * sort keys, processed logits) are a thread's own {@link Scratch}, grown once and reused, not allocated per call
 * (at a 32,000-token vocabulary they were 256-768 KB of garbage per token).
 */
final class Sampler {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    /**
     * One thread's working arrays, each grown the first time a call needs it at least {@code n} long: a thread that
     * only samples greedily never holds any.
     */
    static final class Scratch {
        private static final ThreadLocal<Scratch> MINE = ThreadLocal.withInitial(Scratch::new);

        private double[] probs = new double[0];
        private double[] sorted = new double[0];
        private long[] keys = new long[0];
        private float[] logits = new float[0];
        private boolean[] seen = new boolean[0];

        static Scratch mine() {
            return MINE.get();
        }

        double[] probs(int n) {
            return probs.length >= n ? probs : (probs = new double[n]);
        }

        double[] sorted(int n) {
            return sorted.length >= n ? sorted : (sorted = new double[n]);
        }

        long[] keys(int n) {
            return keys.length >= n ? keys : (keys = new long[n]);
        }

        float[] logits(int n) {
            return logits.length >= n ? logits : (logits = new float[n]);
        }

        boolean[] seen(int n) {
            return seen.length >= n ? seen : (seen = new boolean[n]);
        }
    }

    private Sampler() {
    }

    static int sample(float[] logits, int vocab, SamplingParams params, long draw) {
        return sample(logits, vocab, params, draw, new int[0], 0, new int[0], 0);
    }

    /**
     * Selects a token as {@link SamplingParams} describes. {@code prompt[0, promptLength)} and
     * {@code output[0, outputLength)} are the sequence's history, read only by the penalties.
     */
    static int sample(float[] logits, int vocab, SamplingParams params, long draw, int[] prompt, int promptLength,
            int[] output, int outputLength) {
        Scratch scratch = Scratch.mine();
        if (params.processesLogits()) {
            logits = process(logits, vocab, params, prompt, promptLength, output, outputLength, scratch);
        }
        if (params.isGreedy()) {
            return argmax(logits, vocab);
        }
        if (params.topK() > 0 || params.minP() > 0) {
            return filtered(logits, vocab, params, draw, scratch);
        }
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            max = Math.max(max, logits[i]);
        }
        double[] probs = scratch.probs(vocab);
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
            return lastNonZero(probs, vocab);
        }
        return nucleus(probs, vocab, sum, params.topP(), u, scratch);
    }

    /**
     * Bias, then repetition penalty (prompt and output), then frequency and presence penalties (output), into
     * the scratch's logits array, which it returns; {@code logits} is not changed.
     */
    static float[] process(float[] logits, int vocab, SamplingParams params, int[] prompt, int promptLength,
            int[] output, int outputLength, Scratch scratch) {
        float[] out = scratch.logits(vocab);
        System.arraycopy(logits, 0, out, 0, vocab);
        for (var bias : params.logitBias().entrySet()) {
            int token = bias.getKey();
            if (token < vocab) {
                out[token] += bias.getValue();
            }
        }
        if (params.repetitionPenalty() != 1f) {
            boolean[] seen = scratch.seen(vocab);
            Arrays.fill(seen, 0, vocab, false);
            for (int i = 0; i < promptLength; i++) {
                seen[prompt[i]] = true;
            }
            for (int i = 0; i < outputLength; i++) {
                seen[output[i]] = true;
            }
            float penalty = params.repetitionPenalty();
            for (int i = 0; i < vocab; i++) {
                if (seen[i]) {
                    out[i] = out[i] > 0 ? out[i] / penalty : out[i] * penalty;
                }
            }
        }
        if ((params.presencePenalty() != 0f || params.frequencyPenalty() != 0f) && outputLength > 0) {
            int[] sorted = Arrays.copyOf(output, outputLength);
            Arrays.sort(sorted);
            for (int i = 0; i < sorted.length; ) {
                int token = sorted[i];
                int count = 0;
                while (i < sorted.length && sorted[i] == token) {
                    count++;
                    i++;
                }
                out[token] -= count * params.frequencyPenalty() + params.presencePenalty();
            }
        }
        return out;
    }

    /**
     * Top-k and min-p, then nucleus and draw on what stayed: the tokens filtered out get probability 0, so the
     * same draw code serves (a zero-probability token can never be chosen).
     */
    private static int filtered(float[] logits, int vocab, SamplingParams params, long draw, Scratch scratch) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            max = Math.max(max, logits[i]);
        }
        double[] probs = scratch.probs(vocab);
        for (int i = 0; i < vocab; i++) {
            probs[i] = StrictMath.exp((logits[i] - max) / (double) params.temperature());
        }
        int k = params.topK();
        if (k > 0 && k < vocab) {
            double[] sorted = scratch.sorted(vocab);
            System.arraycopy(probs, 0, sorted, 0, vocab);
            Arrays.sort(sorted, 0, vocab);
            double threshold = sorted[vocab - k];
            int above = 0;
            for (int i = 0; i < vocab; i++) {
                if (probs[i] > threshold) {
                    above++;
                }
            }
            int tiesKept = k - above; // among tokens at the threshold, the lowest ids stay
            for (int i = 0; i < vocab; i++) {
                if (probs[i] < threshold) {
                    probs[i] = 0;
                } else if (probs[i] == threshold) {
                    if (tiesKept > 0) {
                        tiesKept--;
                    } else {
                        probs[i] = 0;
                    }
                }
            }
        }
        if (params.minP() > 0) {
            // The most likely token has probs == 1 (exp(0)) and survives top-k: the bound is minP of it.
            double floor = params.minP();
            for (int i = 0; i < vocab; i++) {
                if (probs[i] < floor) {
                    probs[i] = 0;
                }
            }
        }
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
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
            return lastNonZero(probs, vocab);
        }
        return nucleus(probs, vocab, sum, params.topP(), u, scratch);
    }

    /**
     * Samples among the most likely of {@code probs[0, n)} whose mass reaches {@code topP}; order: probability
     * desc, id asc.
     */
    private static int nucleus(double[] probs, int n, double sum, float topP, double u, Scratch scratch) {
        // Tokens below (1 - topP) / (n - 1) of the mass can never be in the nucleus (llama2.c's pre-filter).
        double cutoff = n > 1 ? (1.0 - topP) / (n - 1) * sum : 0;
        long[] keys = scratch.keys(n);
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

    private static int lastNonZero(double[] probs, int n) {
        for (int i = n - 1; i > 0; i--) {
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
