package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Batched decode equals one-at-a-time decode exactly (tokens and logits), whatever the batch's composition,
 * sequences joining and leaving mid-stream and crossing page boundaries at different steps included. The guarded
 * failure is cross-talk between batch rows: a shared scratch row, a wrong page table, or a reduction that mixes
 * rows.
 */
class BatchedDecodeTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    static final int[] PROMPTS = {1, 17, 63, 64, 65, 130};
    static final int STEPS = 40;

    record Trace(List<Integer> tokens, List<float[]> logits) {
    }

    static Sequence start(InferenceEngine engine, int promptLength, int i) {
        Sequence seq = engine.newSequence(i % 2 == 0 ? SamplingParams.greedy() : new SamplingParams(1.0f, 0.9f, i));
        TestData.prefill(engine, seq, TestData.tokens(promptLength, 100 + i, 259), 32);
        engine.sample(seq);
        return seq;
    }

    static Trace alone(InferenceEngine engine, int promptLength, int i) {
        Sequence seq = start(engine, promptLength, i);
        Trace trace = new Trace(new ArrayList<>(), new ArrayList<>());
        for (int step = 0; step < STEPS; step++) {
            trace.tokens().add(engine.decodeStep(List.of(seq))[0]);
            trace.logits().add(engine.logits(seq));
        }
        engine.free(seq);
        return trace;
    }

    @Test
    void aBatchDecodesExactlyAsEachSequenceAlone() {
        InferenceEngine engine = engines.create(Preset.TINY, 3, Engines.options().withPageTokens(16));
        List<Trace> expected = new ArrayList<>();
        for (int i = 0; i < PROMPTS.length; i++) {
            expected.add(alone(engine, PROMPTS[i], i));
        }
        List<Sequence> batch = new ArrayList<>();
        for (int i = 0; i < PROMPTS.length; i++) {
            batch.add(start(engine, PROMPTS[i], i));
        }
        for (int step = 0; step < STEPS; step++) {
            int[] next = engine.decodeStep(batch);
            for (int i = 0; i < batch.size(); i++) {
                assertThat(next[i]).as("sequence %d step %d", i, step).isEqualTo(expected.get(i).tokens().get(step));
                assertThat(engine.logits(batch.get(i))).as("logits of sequence %d step %d", i, step)
                        .containsExactly(expected.get(i).logits().get(step));
            }
        }
        batch.forEach(engine::free);
    }

    @Test
    void sequencesJoiningAndLeavingTheBatchDoNotDisturbTheOthers() {
        InferenceEngine engine = engines.create(Preset.TINY, 4, Engines.options().withPageTokens(16));
        List<Trace> expected = new ArrayList<>();
        for (int i = 0; i < PROMPTS.length; i++) {
            expected.add(alone(engine, PROMPTS[i], i));
        }
        Sequence[] seqs = new Sequence[PROMPTS.length];
        int[] done = new int[PROMPTS.length];
        int[] joinAt = {0, 3, 3, 10, 11, 25};
        for (int step = 0; step < STEPS + 30; step++) {
            List<Sequence> batch = new ArrayList<>();
            List<Integer> index = new ArrayList<>();
            for (int i = 0; i < seqs.length; i++) {
                if (seqs[i] == null && step == joinAt[i]) {
                    seqs[i] = start(engine, PROMPTS[i], i);
                }
                if (seqs[i] != null && done[i] < STEPS) {
                    batch.add(seqs[i]);
                    index.add(i);
                }
            }
            if (batch.isEmpty()) {
                continue;
            }
            int[] next = engine.decodeStep(batch);
            for (int b = 0; b < batch.size(); b++) {
                int i = index.get(b);
                assertThat(next[b]).isEqualTo(expected.get(i).tokens().get(done[i]));
                done[i]++;
                if (done[i] == STEPS) {
                    engine.free(seqs[i]);
                }
            }
        }
        assertThat(done).containsOnly(STEPS);
    }
}
