package dev.ripcord.engine.tools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.format.gguf.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./ripcord synth-model}: a GGUF of the asked shape that the engine loads and runs, the same bytes for the
 * same seed, nothing left behind but the output file.
 */
class SynthModelTest {

    private static final SynthModel.Shape SHAPE = new SynthModel.Shape(64, 128, 2, 4, 2, 300, 64);

    @TempDir
    Path dir;

    @Test
    void writesAModelOfTheAskedShapeThatTheEngineLoadsAndRuns() throws IOException {
        for (GgmlType type : List.of(GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.F16)) {
            Path out = dir.resolve("synth-" + type + ".gguf");
            SynthModel.write(SHAPE, 7, type, out);
            try (InferenceEngine engine = InferenceEngine.load(out, null,
                    EngineOptions.defaults().withThreads(2).withKvPages(16).withMaxChunkTokens(5))) {
                ModelConfig c = engine.config();
                assertThat(List.of(c.dim(), c.hiddenDim(), c.layers(), c.heads(), c.kvHeads(), c.vocabSize()))
                        .as("%s", type).containsExactly(64, 128, 2, 4, 2, 300);
                Sequence s = engine.newSequence(SamplingParams.greedy());
                try {
                    engine.prefill(s, new int[] {1, 72, 105, 260, 299}, 0, 5);
                    float[] logits = engine.logits(s);
                    assertThat(logits).as("%s", type).hasSize(300);
                    for (float l : logits) {
                        assertThat(Float.isFinite(l)).as("%s: finite logits", type).isTrue();
                    }
                } finally {
                    engine.free(s);
                }
            }
        }
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left.map(p -> p.getFileName().toString())).as("no temporary file left behind")
                    .containsExactlyInAnyOrder("synth-Q8_0.gguf", "synth-Q4_0.gguf", "synth-F16.gguf");
        }
    }

    @Test
    void theSameSeedWritesTheSameBytesAndAnotherSeedOthers() throws IOException {
        Path a = dir.resolve("a.gguf");
        Path b = dir.resolve("b.gguf");
        Path c = dir.resolve("c.gguf");
        SynthModel.write(SHAPE, 7, GgmlType.Q8_0, a);
        SynthModel.write(SHAPE, 7, GgmlType.Q8_0, b);
        SynthModel.write(SHAPE, 8, GgmlType.Q8_0, c);
        assertThat(Files.mismatch(a, b)).isEqualTo(-1L);
        assertThat(Files.mismatch(a, c)).isNotEqualTo(-1L);
        assertThat(Files.size(a)).isEqualTo(Files.size(c));
    }

    @Test
    void shapesThatCannotBeAModelAreRefusedWithTheReason() {
        assertThatIllegalArgumentException().isThrownBy(() -> new SynthModel.Shape(64, 128, 2, 5, 5, 300, 64))
                .withMessageContaining("multiple of heads");
        assertThatIllegalArgumentException().isThrownBy(() -> new SynthModel.Shape(64, 128, 2, 4, 3, 300, 64))
                .withMessageContaining("kv-heads");
        assertThatIllegalArgumentException().isThrownBy(() -> new SynthModel.Shape(64, 100, 2, 4, 2, 300, 64))
                .withMessageContaining("multiples of 32");
        assertThatIllegalArgumentException().isThrownBy(() -> new SynthModel.Shape(64, 128, 2, 4, 2, 100, 64))
                .withMessageContaining("vocab");
    }
}
