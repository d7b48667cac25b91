package dev.ripcord.engine;

import java.util.Arrays;

/**
 * What the engine reports about one sampled token when its {@link SamplingParams#logprobs()} asks for it: the
 * token's log-probability and the most likely tokens' at that position, from the model's raw logits (natural log
 * of the softmax, before bias, penalties, temperature and filtering).
 *
 * @param token        the sampled token
 * @param logprob      its log-probability, {@code <= 0}
 * @param topTokens    the most likely tokens, most likely first (lower id first on ties); owned by this record
 * @param topLogprobs  their log-probabilities, same order and length as {@code topTokens}
 */
public record TokenLogprobs(int token, float logprob, int[] topTokens, float[] topLogprobs) {

    public TokenLogprobs {
        Checks.requireArgument(topTokens.length == topLogprobs.length, "%s top tokens but %s logprobs",
                topTokens.length, topLogprobs.length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenLogprobs t && token == t.token && Float.compare(logprob, t.logprob) == 0
                && Arrays.equals(topTokens, t.topTokens) && Arrays.equals(topLogprobs, t.topLogprobs);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * token + Float.hashCode(logprob)) + Arrays.hashCode(topTokens);
    }

    @Override
    public String toString() {
        return "TokenLogprobs[token=" + token + ", logprob=" + logprob + ", top=" + Arrays.toString(topTokens)
                + " " + Arrays.toString(topLogprobs) + "]";
    }

    /** Log-softmax of {@code logits[0, vocab)} for {@code token} and the {@code top} most likely tokens. */
    static TokenLogprobs of(float[] logits, int vocab, int token, int top) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            max = Math.max(max, logits[i]);
        }
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            sum += StrictMath.exp((double) logits[i] - max);
        }
        double logSum = max + StrictMath.log(sum);
        int n = Math.min(top, vocab);
        int[] ids = new int[n];
        float[] lps = new float[n];
        boolean[] taken = new boolean[vocab];
        for (int k = 0; k < n; k++) {
            int best = -1;
            for (int i = 0; i < vocab; i++) {
                if (!taken[i] && (best < 0 || logits[i] > logits[best])) {
                    best = i;
                }
            }
            taken[best] = true;
            ids[k] = best;
            lps[k] = (float) (logits[best] - logSum);
        }
        return new TokenLogprobs(token, (float) (logits[token] - logSum), ids, lps);
    }
}
