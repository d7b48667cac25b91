package dev.ripcord.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The sampling pipeline of {@link SamplingParams}, written the obvious way (lists, sets, a comparator, one step
 * after the other) to check the engine's {@link Sampler}, which avoids sorting the vocabulary where it can.
 *
 * <p>Only the arithmetic that decides which token a given uniform draw lands on is shared on purpose: logits are
 * processed in float, probabilities are {@code exp((l - max) / T)} in double, and the draw {@code u} is laid over
 * the kept tokens in id order (or, under a nucleus, in the nucleus's order: probability as a float, descending,
 * lower id first); that mapping is the sampler's definition, not an implementation detail.
 */
final class ReferenceSampler {

    private ReferenceSampler() {
    }

    static int sample(float[] logits, SamplingParams p, long draw, int[] prompt, int[] output) {
        int vocab = logits.length;
        float[] l = logits.clone();
        p.logitBias().forEach((token, bias) -> l[token] += bias);
        if (p.repetitionPenalty() != 1f) {
            Set<Integer> seen = new HashSet<>();
            for (int t : prompt) {
                seen.add(t);
            }
            for (int t : output) {
                seen.add(t);
            }
            for (int t : seen) {
                l[t] = l[t] > 0 ? l[t] / p.repetitionPenalty() : l[t] * p.repetitionPenalty();
            }
        }
        Map<Integer, Integer> counts = new HashMap<>();
        for (int t : output) {
            counts.merge(t, 1, Integer::sum);
        }
        if (p.presencePenalty() != 0f || p.frequencyPenalty() != 0f) {
            counts.forEach((t, c) -> l[t] -= c * p.frequencyPenalty() + p.presencePenalty());
        }
        if (p.isGreedy()) {
            int best = 0;
            for (int i = 1; i < vocab; i++) {
                if (l[i] > l[best]) {
                    best = i;
                }
            }
            return best;
        }
        float max = Float.NEGATIVE_INFINITY;
        for (float x : l) {
            max = Math.max(max, x);
        }
        double[] prob = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            prob[i] = StrictMath.exp((l[i] - max) / (double) p.temperature());
        }
        // Candidates, most likely first, lower id first on ties.
        List<Integer> byLikelihood = new ArrayList<>();
        for (int i = 0; i < vocab; i++) {
            byLikelihood.add(i);
        }
        byLikelihood.sort(Comparator.<Integer>comparingDouble(i -> -prob[i]).thenComparingInt(i -> i));
        Set<Integer> kept = new HashSet<>(byLikelihood);
        if (p.topK() > 0) {
            kept.retainAll(byLikelihood.subList(0, Math.min(p.topK(), vocab)));
        }
        double top = prob[byLikelihood.getFirst()];
        kept.removeIf(i -> prob[i] < p.minP() * top);
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < vocab; i++) {
            if (kept.contains(i)) {
                order.add(i);
            }
        }
        double u = Sampler.uniform(p.seed(), draw);
        if (p.topP() < 1f) {
            double sum = 0;
            for (int i : order) {
                sum += prob[i];
            }
            double total = sum;
            order.sort(Comparator.<Integer>comparingDouble(i -> -(float) (prob[i] / total)).thenComparingInt(i -> i));
            double mass = 0;
            List<Integer> nucleus = new ArrayList<>();
            for (int i : order) {
                nucleus.add(i);
                mass += prob[i];
                if (mass >= p.topP() * total) {
                    break;
                }
            }
            order = nucleus;
        }
        double mass = 0;
        for (int i : order) {
            mass += prob[i];
        }
        double target = u * mass;
        double running = 0;
        for (int i : order) {
            running += prob[i];
            if (target < running) {
                return i;
            }
        }
        return order.getLast();
    }

    /** Natural-log softmax of the raw logits, in double. */
    static double[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : logits) {
            max = Math.max(max, x);
        }
        double sum = 0;
        for (float x : logits) {
            sum += Math.exp(x - max);
        }
        double[] out = new double[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = logits[i] - max - Math.log(sum);
        }
        return out;
    }
}
