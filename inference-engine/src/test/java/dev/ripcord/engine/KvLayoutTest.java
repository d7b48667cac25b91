package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.engine.weights.RandomWeights;

/**
 * The page bytes mean what {@link KvLayout} documents: at every documented offset sits the post-rotary key or the
 * value that the naive reference model computes for that layer, head, position and dimension (tolerance 1e-4 on
 * values of order 1, FP32 against double). kv-transfer-lib and any other reader rely on this byte layout.
 */
class KvLayoutTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    @TempDir
    Path dir;

    @Test
    void documentedOffsetsHoldTheReferenceKeysAndValues() throws IOException {
        Path checkpoint = dir.resolve("tiny.bin");
        Llama2cCheckpoint.write(checkpoint, new RandomWeights(Preset.TINY.config(), 3, "tiny"));
        NaiveLlama reference = new NaiveLlama(checkpoint);
        InferenceEngine engine = engines.load(checkpoint, null, Engines.options().withPageTokens(32));
        int[] prompt = TestData.tokens(70, 1, 259);
        reference.forward(prompt);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, prompt.length);
        KvLayout layout = engine.kvLayout();
        for (int p = 0; p < prompt.length; p++) {
            MemorySegment page = engine.pagePool().page(seq.poolPage(p / layout.pageTokens()));
            int slot = p % layout.pageTokens();
            for (int l = 0; l < layout.layers(); l++) {
                for (int g = 0; g < layout.kvHeads(); g++) {
                    for (int d = 0; d < layout.headSize(); d++) {
                        int i = g * layout.headSize() + d;
                        float key = page.get(ValueLayout.JAVA_FLOAT_UNALIGNED, layout.keyOffset(l, g, d, slot));
                        float value = page.get(ValueLayout.JAVA_FLOAT_UNALIGNED, layout.valueOffset(l, g, slot, d));
                        assertThat((double) key).isCloseTo(reference.keys[l][p][i], within(1e-4));
                        assertThat((double) value).isCloseTo(reference.values[l][p][i], within(1e-4));
                    }
                }
            }
        }
        engine.free(seq);
    }

    @Test
    void pagesAreConsecutiveInOneSegmentAndTheFormulaAddsUp() {
        InferenceEngine engine = engines.tiny(1);
        KvPagePool pool = engine.pagePool();
        KvLayout layout = engine.kvLayout();
        assertThat(pool.segment().byteSize()).isEqualTo(pool.pageCount() * pool.pageBytes());
        assertThat(pool.segment().address() % 4096).isZero();
        assertThat(layout.pageBytes()).isEqualTo(2L * layout.layers() * layout.kvHeads() * layout.headSize()
                * layout.pageTokens() * Float.BYTES + KvLayout.TRAILER_BYTES);
        assertThat(layout.payloadBytes()).isEqualTo(layout.pageBytes() - KvLayout.TRAILER_BYTES);
        // The last value of the last layer ends exactly where the trailer starts.
        int last = layout.pageTokens() - 1;
        assertThat(layout.valueOffset(layout.layers() - 1, layout.kvHeads() - 1, last, layout.headSize() - 1) + 4)
                .isEqualTo(layout.payloadBytes());
        assertThat(layout.keyOffset(0, 0, 0, 0)).isZero();
        assertThat(layout.valueOffset(0, 0, 0, 0))
                .isEqualTo((long) layout.kvHeads() * layout.headSize() * layout.pageTokens() * Float.BYTES);
        Sequence seq = engine.reserve(100, SamplingParams.greedy());
        for (KvPage page : seq.pages()) {
            assertThat(page.poolOffset()).isEqualTo(page.poolIndex() * pool.pageBytes());
            assertThat(page.byteSize()).isEqualTo(pool.pageBytes());
            assertThat(page.segment().address()).isEqualTo(pool.segment().address() + page.poolOffset());
        }
        engine.free(seq);
    }
}
