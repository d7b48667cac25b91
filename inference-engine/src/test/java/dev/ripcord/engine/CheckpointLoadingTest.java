package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.tokenizer.BpeTokenizer;

/**
 * Serving a llama2.c checkpoint by path: a file written in the format loads into an engine that matches the naive
 * reference, with its tokenizer.bin, and every kind of malformed file fails with a message naming the file and the
 * problem.
 */
class CheckpointLoadingTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    @TempDir
    Path dir;

    /** A TinyStories-like shape in miniature: MHA (kv heads = heads), unshared classifier, head size 24. */
    static final ModelConfig UNSHARED = ModelConfig.llama2c(48, 96, 2, 2, 2, 300, 64, false);

    Path write(ModelConfig config, long seed) throws IOException {
        Path file = dir.resolve("model-" + seed + ".bin");
        Llama2cCheckpoint.write(file, new RandomWeights(config, seed, "test"));
        return file;
    }

    @Test
    void anUnsharedClassifierCheckpointWithItsTokenizerServesTheReferenceModel() throws IOException {
        Path checkpoint = write(UNSHARED, 3);
        assertThat(Files.size(checkpoint)).isEqualTo(Llama2cCheckpoint.expectedBytes(UNSHARED));
        assertThat(Llama2cCheckpoint.readHeader(checkpoint)).isEqualTo(UNSHARED);
        Path tokenizerFile = dir.resolve("tokenizer.bin");
        BpeTokenizer vocabulary = vocabulary(UNSHARED.vocabSize());
        vocabulary.write(tokenizerFile);

        InferenceEngine engine = engines.load(checkpoint, tokenizerFile, Engines.options());
        assertThat(engine.tokenizer()).isInstanceOf(BpeTokenizer.class);
        assertThat(engine.describe()).contains(checkpoint.toString());
        int[] prompt = engine.tokenizer().encode("hello there", true);
        assertThat(prompt).contains(259); // "he" merged
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, prompt.length);
        double[] expected = new NaiveLlama(checkpoint).forward(prompt);
        assertThat(ReferenceForwardTest.maxAbsDiff(engine.logits(seq), expected))
                .isLessThan(ReferenceForwardTest.TOLERANCE);
        engine.free(seq);
    }

    /** Specials, byte fallbacks, then a few merges; pieces beyond that are filler. */
    static BpeTokenizer vocabulary(int size) {
        byte[][] pieces = new byte[size][];
        float[] scores = new float[size];
        pieces[0] = "<unk>".getBytes();
        pieces[1] = "\n<s>\n".getBytes();
        pieces[2] = "\n</s>\n".getBytes();
        for (int b = 0; b < 256; b++) {
            pieces[3 + b] = "<0x%02X>".formatted(b).getBytes();
        }
        String[] merges = {"he", "ll", " ", "h", "e", "l", "o", "t", "r"};
        for (int i = 259; i < size; i++) {
            int m = i - 259;
            pieces[i] = (m < merges.length ? merges[m] : "~" + m).getBytes();
            scores[i] = -m;
        }
        return BpeTokenizer.of(pieces, scores);
    }

    @Test
    void aTruncatedCheckpointNamesTheFileAndTheMissingBytes() throws IOException {
        Path checkpoint = write(Preset.TINY.config(), 1);
        byte[] bytes = Files.readAllBytes(checkpoint);
        Path truncated = dir.resolve("truncated.bin");
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length - 1000));
        assertThatThrownBy(() -> InferenceEngine.load(truncated, null, Engines.options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining(truncated.toString())
                .hasMessageContaining("truncated")
                .hasMessageContaining("requires " + bytes.length + " bytes");
        Path headerOnly = dir.resolve("short.bin");
        Files.write(headerOnly, Arrays.copyOf(bytes, 10));
        assertThatThrownBy(() -> InferenceEngine.load(headerOnly, null, Engines.options()))
                .hasMessageContaining("shorter than the 28-byte header");
    }

    @Test
    void trailingBytesAndCorruptHeadersAreReportedPrecisely() throws IOException {
        Path checkpoint = write(Preset.TINY.config(), 1);
        byte[] bytes = Files.readAllBytes(checkpoint);
        Path trailing = dir.resolve("trailing.bin");
        Files.write(trailing, Arrays.copyOf(bytes, bytes.length + 4));
        assertThatThrownBy(() -> Llama2cCheckpoint.open(trailing)).hasMessageContaining("trailing data");

        assertThatThrownBy(() -> Llama2cCheckpoint.open(withHeaderInt(bytes, 3, 0, "zero-heads.bin")))
                .hasMessageContaining("non-positive").hasMessageContaining("n_heads=0");
        assertThatThrownBy(() -> Llama2cCheckpoint.open(withHeaderInt(bytes, 3, 3, "odd-heads.bin")))
                .hasMessageContaining("divisible");
        assertThatThrownBy(() -> Llama2cCheckpoint.open(withHeaderInt(bytes, 0, 0x616b3432, "v1.bin")))
                .hasMessageContaining("version 1/2 export");
        assertThatThrownBy(() -> Llama2cCheckpoint.open(withHeaderInt(bytes, 1, 1 << 30, "huge.bin")))
                .hasMessageContaining("implausible");
        assertThatThrownBy(() -> Llama2cCheckpoint.open(dir.resolve("nope.bin")))
                .hasMessageContaining("nope.bin").hasMessageContaining("no such file");
    }

    @Test
    void aTokenizerThatDoesNotMatchTheCheckpointIsRejected() throws IOException {
        Path checkpoint = write(UNSHARED, 4);
        Path tokenizerFile = dir.resolve("small-vocab.bin");
        vocabulary(280).write(tokenizerFile);
        assertThatThrownBy(() -> InferenceEngine.load(checkpoint, tokenizerFile, Engines.options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining(tokenizerFile.toString()).hasMessageContaining("truncated");
    }

    Path withHeaderInt(byte[] original, int field, int value, String name) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(original.clone()).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(field * 4, value);
        Path file = dir.resolve(name);
        Files.write(file, b.array());
        return file;
    }
}
