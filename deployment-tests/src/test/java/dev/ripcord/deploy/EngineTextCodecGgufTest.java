package dev.ripcord.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.tools.GgufConvert;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.format.gguf.GgmlType;
import dev.ripcord.gateway.model.EngineTextCodec;
import dev.ripcord.gateway.model.ModelProperties;
import dev.ripcord.tokenizer.BpeTokenizer;

/**
 * A GGUF checkpoint written by the engine's converter gives the gateway its shape and its own tokenizer, as the
 * workers load it. Here rather than in gateway-service because the gateway no longer depends on the engine.
 */
class EngineTextCodecGgufTest {
    @TempDir
    Path dir;

    @Test
    void aGgufCheckpointSuppliesContextLengthAndItsBuiltInTokenizer() throws IOException {
        ModelConfig c = ModelConfig.llama2c(64, 96, 1, 4, 4, 300, 96, true);
        byte[][] pieces = new byte[300][];
        float[] scores = new float[300];
        pieces[0] = "<unk>".getBytes();
        pieces[1] = "<s>".getBytes();
        pieces[2] = "</s>".getBytes();
        for (int b = 0; b < 256; b++) {
            pieces[3 + b] = String.format("<0x%02X>", b).getBytes();
        }
        List<String> words = new ArrayList<>(List.of(" ", "h", "i", "hi", " hi"));
        for (int i = 259; i < 300; i++) {
            pieces[i] = (i - 259 < words.size() ? words.get(i - 259) : "w" + i).getBytes();
            scores[i] = i - 259 < words.size() ? i : -i;
        }
        Path file = dir.resolve("tiny-q8_0.gguf");
        GgufConvert.write(new RandomWeights(c, 1, "t"), BpeTokenizer.of(pieces, scores), file, GgmlType.Q8_0, "tiny");

        EngineTextCodec codec = EngineTextCodec.from(new ModelProperties("small", file, null, null, 4096));

        assertThat(codec.contextLength()).isEqualTo(96);
        assertThat(codec.vocabularySize()).isEqualTo(300);
        assertThat(codec.modelName()).isEqualTo("tiny-q8_0");
        assertThat(codec.encode("hi")).containsExactly(1, 263);
    }
}
