package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * Sampling runs once per token on every sequence of a step: at a real vocabulary it must not allocate
 * vocabulary-sized arrays per call (it allocated 256-768 KB per token before its working arrays became a thread's
 * own). Counts the bytes this thread allocates over many calls, after the first has grown the scratch.
 */
class SamplerAllocationTest {

    private static final int VOCAB = 32_000;
    private static final int CALLS = 200;

    @Test
    void samplingAtARealVocabularyAllocatesNoVocabularySizedArraysPerToken() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        float[] logits = new float[VOCAB];
        Random random = new Random(1);
        for (int i = 0; i < VOCAB; i++) {
            logits[i] = (float) random.nextGaussian() * 3;
        }
        int[] prompt = {5, 6, 7};
        int[] output = new int[CALLS + 1];
        SamplingParams[] every = {
                new SamplingParams(0.8f, 1f, 3),
                new SamplingParams(0.8f, 0.9f, 3),
                new SamplingParams(1f, 0.95f, 3).withTopK(40).withMinP(0.05f),
                new SamplingParams(0.7f, 0.9f, 3).withPenalties(1.1f, 0.2f, 0.1f).withLogitBias(Map.of(9, 1f))};
        for (SamplingParams params : every) {
            Sampler.sample(logits, VOCAB, params, 0, prompt, prompt.length, output, 0); // grows the scratch
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int draw = 1; draw <= CALLS; draw++) {
                output[draw] = Sampler.sample(logits, VOCAB, params, draw, prompt, prompt.length, output, draw);
            }
            long perCall = (threads.getCurrentThreadAllocatedBytes() - before) / CALLS;
            // One vocabulary-sized array of doubles is 256,000 bytes; what is left is an iterator or a sorted copy
            // of the (short) output history.
            assertThat(perCall).as("bytes allocated per call with %s", params).isLessThan(VOCAB);
        }
    }
}
