package dev.ripcord.gateway.generation;

import java.util.Arrays;

/**
 * A generated token's log-probability and the most likely alternatives at its position (natural logs of the
 * model's raw softmax), present when the request asked for logprobs ({@link SamplingOptions#logprobs()}).
 *
 * @param logprob     the token's log-probability
 * @param topTokens   the most likely tokens, most likely first; owned by this record
 * @param topLogprobs their log-probabilities, same length and order
 */
public record Logprobs(float logprob, int[] topTokens, float[] topLogprobs) {

    public Logprobs {
        if (topTokens.length != topLogprobs.length) {
            throw new IllegalArgumentException(topTokens.length + " top tokens but " + topLogprobs.length
                    + " logprobs");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Logprobs l && Float.compare(logprob, l.logprob) == 0
                && Arrays.equals(topTokens, l.topTokens) && Arrays.equals(topLogprobs, l.topLogprobs);
    }

    @Override
    public int hashCode() {
        return 31 * Float.hashCode(logprob) + Arrays.hashCode(topTokens);
    }

    @Override
    public String toString() {
        return "Logprobs[" + logprob + ", top=" + Arrays.toString(topTokens) + "]";
    }
}
