package dev.ripcord.gateway.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServedShapeTest {

    @TempDir
    Path dir;

    Path header(String name, int... fields) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(fields.length * 4 + 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int f : fields) {
            b.putInt(f);
        }
        Path file = dir.resolve(name);
        Files.write(file, b.array());
        return file;
    }

    @Test
    void aCheckpointHeaderGivesVocabularyAndContextAndANegativeVocabMeansAnUnsharedClassifier() throws IOException {
        // stories15M's header: dim 288, hidden 768, 6 layers, 6 heads, 6 kv heads, vocab 32000, seq_len 256.
        assertThat(ServedShape.ofLlama2cCheckpoint(header("s.bin", 288, 768, 6, 6, 6, 32_000, 256)))
                .isEqualTo(new ServedShape(32_000, 256));
        assertThat(ServedShape.ofLlama2cCheckpoint(header("u.bin", 288, 768, 6, 6, 6, -32_000, 256)))
                .isEqualTo(new ServedShape(32_000, 256));
    }

    @Test
    void aFileThatIsNotALegacyCheckpointIsRejectedNamingIt() throws IOException {
        assertThatThrownBy(() -> ServedShape.ofLlama2cCheckpoint(header("v1.bin", 0x616b3432, 1, 1, 1, 1, 1, 1)))
                .hasMessageContaining("v1.bin").hasMessageContaining("version 1/2");
        assertThatThrownBy(() -> ServedShape.ofLlama2cCheckpoint(header("zero.bin", 288, 768, 6, 6, 6, 0, 256)))
                .hasMessageContaining("zero.bin").hasMessageContaining("implausible");
        Path shortFile = dir.resolve("short.bin");
        Files.write(shortFile, new byte[10]);
        assertThatThrownBy(() -> ServedShape.ofLlama2cCheckpoint(shortFile)).hasMessageContaining("shorter");
        assertThatThrownBy(() -> ServedShape.ofLlama2cCheckpoint(dir.resolve("nope.bin")))
                .hasMessageContaining("no such file");
    }

    @Test
    void presetsAreKnownByNameAndAnUnknownOneIsNamed() {
        assertThat(ServedShape.preset(" Tiny ").contextLength()).isEqualTo(512);
        assertThat(ServedShape.preset("small").contextLength()).isEqualTo(16_384);
        assertThatThrownBy(() -> ServedShape.preset("huge")).hasMessageContaining("'huge'");
    }
}
