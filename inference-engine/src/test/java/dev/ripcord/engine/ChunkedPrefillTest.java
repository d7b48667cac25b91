package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Prefill results do not depend on how the prompt is cut into chunks, on the thread count or on the kernel
 * implementation: KV pages (every valid byte) and logits are bit-identical. The guarded failure is a
 * chunk-dependent reduction order (e.g. an online softmax blocked by chunk), which would make a cancelled and
 * resumed prompt, or a prompt scheduled differently, produce different tokens.
 */
class ChunkedPrefillTest {
    static final int PROMPT = 300;

    @RegisterExtension
    static final Engines engines = new Engines();

    record Result(float[] kv, float[] logits) {
    }

    static Result prefill(InferenceEngine engine, int[] prompt, int chunk) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            TestData.prefill(engine, seq, prompt, chunk);
            return new Result(TestData.kv(engine, seq), engine.logits(seq));
        } finally {
            engine.free(seq);
        }
    }

    @Test
    void chunkedPrefillEqualsOneShotPrefillBitForBit() {
        InferenceEngine engine = engines.tiny(42);
        int[] prompt = TestData.tokens(PROMPT, 1, 259);
        Result oneShot = prefill(engine, prompt, PROMPT);
        for (int chunk : new int[] {1, 3, 16, 64, 100, 256}) {
            Result chunked = prefill(engine, prompt, chunk);
            assertThat(chunked.kv()).as("KV pages with chunks of %d", chunk).containsExactly(oneShot.kv());
            assertThat(chunked.logits()).as("logits with chunks of %d", chunk).containsExactly(oneShot.logits());
        }
    }

    @Test
    void chunkBoundariesThatSplitPagesAndTilesUnevenlyAgree() {
        InferenceEngine engine = engines.create(Preset.TINY, 42, Engines.options().withPageTokens(16));
        int[] prompt = TestData.tokens(PROMPT, 2, 259);
        Result oneShot = prefill(engine, prompt, PROMPT);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        int[] cuts = {5, 6, 21, 22, 23, 48, 97, 150, 151, 299, 300};
        int from = 0;
        for (int cut : cuts) {
            engine.prefill(seq, prompt, from, cut);
            from = cut;
        }
        assertThat(TestData.kv(engine, seq)).containsExactly(oneShot.kv());
        assertThat(engine.logits(seq)).containsExactly(oneShot.logits());
        engine.free(seq);
    }

    @Test
    void threadCountAndKernelImplementationDoNotChangeAnyBit() {
        int[] prompt = TestData.tokens(150, 3, 259);
        Result reference = prefill(engines.create(Preset.TINY, 9, Engines.options().withThreads(1)), prompt, 64);
        for (EngineOptions options : List.of(Engines.options().withThreads(2), Engines.options().withThreads(3),
                Engines.options().withThreads(2).withKernels(KernelMode.SCALAR))) {
            Result other = prefill(engines.create(Preset.TINY, 9, options), prompt, 64);
            assertThat(other.kv()).as("KV with %s", options).containsExactly(reference.kv());
            assertThat(other.logits()).as("logits with %s", options).containsExactly(reference.logits());
        }
    }

    @Test
    void decodingATokenEqualsPrefillingIt() {
        InferenceEngine engine = engines.tiny(5);
        int[] prompt = TestData.tokens(130, 4, 259);
        Result full = prefill(engine, prompt, 130);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, 129);
        engine.setNextToken(seq, prompt[129]);
        engine.decodeStep(List.of(seq));
        assertThat(TestData.kv(engine, seq)).containsExactly(full.kv());
        assertThat(engine.logits(seq)).containsExactly(full.logits());
        engine.free(seq);
    }

    @Test
    void smallsHeadShapeMatchesAcrossChunkingToo() {
        // small's attention shape (head size 64, two query heads per KV head) takes the 4x4 and 2x4 attention
        // tiles that tiny's head size of 16 never reaches; one layer keeps a cold JVM fast.
        ModelConfig smallHeads = ModelConfig.llama2c(128, 256, 1, 2, 1, 259, 512, true);
        InferenceEngine engine = engines.create(smallHeads, 1, Engines.options());
        int[] prompt = TestData.tokens(160, 5, 259);
        Result oneShot = prefill(engine, prompt, 160);
        Result chunked = prefill(engine, prompt, 37);
        assertThat(chunked.kv()).containsExactly(oneShot.kv());
        assertThat(chunked.logits()).containsExactly(oneShot.logits());
    }
}
