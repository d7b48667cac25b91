package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

class SamplingTest {
    static final float[] LOGITS = {1f, 3f, 2.5f, 3f, -1f, 0f};

    @Test
    void greedyTakesTheArgmaxAndTheLowestIdOnTies() {
        assertThat(Sampler.sample(LOGITS, LOGITS.length, SamplingParams.greedy(), 0)).isEqualTo(1);
    }

    @Test
    void theSameSeedAndDrawGiveTheSameTokenAndSeedsDiffer() {
        SamplingParams params = new SamplingParams(1.5f, 1f, 42);
        Set<Integer> seen = new HashSet<>();
        for (int draw = 0; draw < 200; draw++) {
            int token = Sampler.sample(LOGITS, LOGITS.length, params, draw);
            assertThat(Sampler.sample(LOGITS, LOGITS.length, params, draw)).isEqualTo(token);
            seen.add(token);
        }
        assertThat(seen).hasSizeGreaterThan(3);
        assertThat(Sampler.uniform(1, 0)).isNotEqualTo(Sampler.uniform(2, 0));
        assertThat(Sampler.uniform(1, 0)).isEqualTo(Sampler.uniform(1, 0)).isBetween(0.0, 1.0);
    }

    @Test
    void topPRestrictsSamplingToTheNucleus() {
        SamplingParams narrow = new SamplingParams(1f, 0.3f, 7);
        for (int draw = 0; draw < 200; draw++) {
            // tokens 1 and 3 tie at the top with ~38% each: a 0.3 nucleus holds only the first of them.
            assertThat(Sampler.sample(LOGITS, LOGITS.length, narrow, draw)).isEqualTo(1);
        }
        SamplingParams wide = new SamplingParams(1f, 0.8f, 7);
        Set<Integer> seen = new HashSet<>();
        for (int draw = 0; draw < 400; draw++) {
            seen.add(Sampler.sample(LOGITS, LOGITS.length, wide, draw));
        }
        assertThat(seen).containsExactlyInAnyOrder(1, 2, 3);
    }

    @Test
    void samplingFrequenciesFollowTheSoftmax() {
        SamplingParams params = new SamplingParams(1f, 1f, 99);
        int[] counts = new int[LOGITS.length];
        int draws = 20_000;
        for (int draw = 0; draw < draws; draw++) {
            counts[Sampler.sample(LOGITS, LOGITS.length, params, draw)]++;
        }
        double sum = 0;
        for (float l : LOGITS) {
            sum += Math.exp(l);
        }
        for (int i = 0; i < LOGITS.length; i++) {
            double expected = Math.exp(LOGITS[i]) / sum;
            assertThat(counts[i] / (double) draws).as("token %d", i).isCloseTo(expected,
                    org.assertj.core.api.Assertions.within(0.02));
        }
    }

    @Test
    void invalidParametersAreRejected() {
        assertThatThrownBy(() -> new SamplingParams(-1f, 1f, 0)).hasMessageContaining("temperature");
        assertThatThrownBy(() -> new SamplingParams(1f, 0f, 0)).hasMessageContaining("topP");
        assertThatThrownBy(() -> new SamplingParams(Float.NaN, 1f, 0)).hasMessageContaining("temperature");
    }
}
