package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * Every sampling knob, alone and together, picks exactly the token {@link ReferenceSampler} picks for the same
 * logits, history, seed and draw, over many random logit vectors (with deliberate ties) and draws; and each knob
 * has the effect it promises (a token outside the top k, below min-p, or banned by a -100 bias is never drawn).
 */
class SamplerMatchesReferenceTest {

    private static final int VOCAB = 300;

    static Stream<Arguments> knobs() {
        SamplingParams base = new SamplingParams(0.9f, 1f, 7);
        return Stream.of(
                Arguments.of("top_k", base.withTopK(5)),
                Arguments.of("top_k=1", base.withTopK(1)),
                Arguments.of("min_p", base.withMinP(0.1f)),
                Arguments.of("repetition_penalty", base.withPenalties(1.5f, 0f, 0f)),
                Arguments.of("repetition_penalty<1", base.withPenalties(0.7f, 0f, 0f)),
                Arguments.of("presence_penalty", base.withPenalties(1f, 1.2f, 0f)),
                Arguments.of("frequency_penalty", base.withPenalties(1f, 0f, 0.8f)),
                Arguments.of("negative penalties", base.withPenalties(1f, -1.5f, -0.5f)),
                Arguments.of("logit_bias", base.withLogitBias(Map.of(3, 5f, 4, -100f, 299, 100f))),
                Arguments.of("top_p with top_k", base.withTopK(20).withMinP(0.01f)
                        .withPenalties(1f, 0f, 0f).withLogitBias(Map.of(9, 1f))),
                Arguments.of("everything", new SamplingParams(1.3f, 0.85f, 11).withTopK(50).withMinP(0.05f)
                        .withPenalties(1.2f, 0.5f, 0.25f).withLogitBias(Map.of(1, 2f, 2, -3f))),
                Arguments.of("greedy with penalties", new SamplingParams(0f, 1f, 0).withPenalties(1.4f, 0.6f, 0.6f)
                        .withLogitBias(Map.of(100, 3f))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("knobs")
    void everyDrawPicksTheReferenceSamplersToken(String name, SamplingParams params) {
        Random random = new Random(name.hashCode());
        for (int trial = 0; trial < 40; trial++) {
            float[] logits = logits(random);
            int[] prompt = random.ints(random.nextInt(20), 0, VOCAB).toArray();
            int[] output = random.ints(random.nextInt(30), 0, VOCAB / 10).toArray(); // repeats on purpose
            for (long draw = 0; draw < 25; draw++) {
                int expected = ReferenceSampler.sample(logits, params, draw, prompt, output);
                int actual = Sampler.sample(logits, VOCAB, params, draw, prompt, prompt.length,
                        Arrays.copyOf(output, output.length + 3), output.length);
                assertThat(actual).as("%s, trial %d, draw %d", name, trial, draw).isEqualTo(expected);
            }
        }
    }

    @Test
    void topKMinPAndABanNeverDrawWhatTheyExclude() {
        Random random = new Random(5);
        for (int trial = 0; trial < 30; trial++) {
            float[] logits = logits(random);
            Integer[] order = new Integer[VOCAB];
            Arrays.setAll(order, i -> i);
            Arrays.sort(order, (a, b) -> logits[a] != logits[b] ? Float.compare(logits[b], logits[a]) : a - b);
            Set<Integer> top3 = Set.of(order[0], order[1], order[2]);
            SamplingParams k3 = new SamplingParams(2f, 1f, trial).withTopK(3);
            SamplingParams minP = new SamplingParams(1f, 1f, trial).withMinP(0.5f);
            SamplingParams ban = new SamplingParams(0f, 1f, trial).withLogitBias(Map.of(order[0], -100f));
            Set<Integer> seen = new HashSet<>();
            for (long draw = 0; draw < 50; draw++) {
                int k = Sampler.sample(logits, VOCAB, k3, draw);
                seen.add(k);
                assertThat(top3).contains(k);
                int m = Sampler.sample(logits, VOCAB, minP, draw);
                assertThat((double) logits[m]).isGreaterThanOrEqualTo(logits[order[0]] + Math.log(0.5) - 1e-6);
                assertThat(Sampler.sample(logits, VOCAB, ban, draw)).isNotEqualTo(order[0]);
            }
        }
    }

    @Test
    void aPlusHundredBiasForcesItsToken() {
        float[] logits = logits(new Random(1));
        SamplingParams forced = new SamplingParams(1f, 1f, 3).withLogitBias(Map.of(123, 100f));
        for (long draw = 0; draw < 100; draw++) {
            assertThat(Sampler.sample(logits, VOCAB, forced, draw)).isEqualTo(123);
        }
    }

    @Test
    void logprobsAreTheRawLogSoftmaxAndTheTopAreSortedWithTiesByLowerId() {
        float[] logits = logits(new Random(9));
        logits[42] = 9f;
        logits[7] = 9f; // a tie at the top: id 7 first
        double[] expected = ReferenceSampler.logSoftmax(logits);
        TokenLogprobs lp = TokenLogprobs.of(logits, VOCAB, 100, 5);
        assertThat(lp.token()).isEqualTo(100);
        assertThat((double) lp.logprob()).isCloseTo(expected[100], within(1e-5));
        assertThat(lp.topTokens()).hasSize(5).startsWith(7, 42);
        for (int i = 0; i < 5; i++) {
            assertThat((double) lp.topLogprobs()[i]).isCloseTo(expected[lp.topTokens()[i]], within(1e-5));
            if (i > 0) {
                assertThat(lp.topLogprobs()[i]).isLessThanOrEqualTo(lp.topLogprobs()[i - 1]);
            }
        }
        assertThat(TokenLogprobs.of(logits, VOCAB, 100, 0).topTokens()).isEmpty();
    }

    /** Random logits with a few exact ties, so tie-breaking is exercised. */
    private static float[] logits(Random random) {
        float[] logits = new float[VOCAB];
        for (int i = 0; i < VOCAB; i++) {
            logits[i] = (float) (random.nextGaussian() * 2);
        }
        for (int i = 0; i < 10; i++) {
            logits[random.nextInt(VOCAB)] = logits[random.nextInt(VOCAB)];
        }
        return logits;
    }
}
