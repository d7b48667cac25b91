package dev.ripcord.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.format.gguf.GgufValueType;
import dev.ripcord.format.gguf.GgufWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tokenizers read from real GGUF files (written with model-format's writer): metadata only, no tensors needed. */
class GgufTokenizerFileTest {

    @TempDir
    Path dir;

    /** Writes {@code metadata} (in the reader's value contract) as GGUF, with the types llama.cpp's converter uses. */
    static void write(Map<String, Object> metadata, Path file) throws IOException {
        GgufWriter w = new GgufWriter().putString("general.architecture", "llama");
        for (Map.Entry<String, Object> e : metadata.entrySet()) {
            Object v = e.getValue();
            switch (v) {
                case String s -> w.putString(e.getKey(), s);
                case Long l -> w.putU32(e.getKey(), l);
                case Boolean b -> w.putBool(e.getKey(), b);
                case List<?> list when !list.isEmpty() && list.getFirst() instanceof Float ->
                        w.putArray(e.getKey(), GgufValueType.FLOAT32, list);
                case List<?> list when !list.isEmpty() && list.getFirst() instanceof Long ->
                        w.putArray(e.getKey(), GgufValueType.INT32,
                                list.stream().map(x -> (int) (long) (Long) x).toList());
                case List<?> list -> w.putArray(e.getKey(), GgufValueType.STRING, list);
                default -> throw new IllegalArgumentException(e.getKey());
            }
        }
        w.write(file);
    }

    @Test
    void aGgufFilesTokenizerEncodesAsItsMetadataMapDoes() throws IOException {
        Map<String, Object> metadata = TokenizersTest.tinySpm();
        metadata.put("tokenizer.chat_template", "{{ messages[0]['content'] }}");
        Path file = dir.resolve("tiny.gguf");
        write(metadata, file);
        Tokenizer fromFile = Tokenizers.fromGguf(file);
        Tokenizer fromMap = Tokenizers.fromGgufMetadata(metadata);
        for (String text : List.of("ab a", "a\n<|end|>b", "é")) {
            assertThat(fromFile.encode(text, true, true)).containsExactly(fromMap.encode(text, true, true));
        }
        try (GgufFile gguf = GgufFile.open(file)) {
            assertThat(Tokenizers.chatTemplate(gguf.metadata())).contains("{{ messages[0]['content'] }}");
        }
    }

    @Test
    void aFileThatIsNotGgufOrHasAnUnsupportedTokenizerIsNamed() throws IOException {
        Path notGguf = Files.write(dir.resolve("x.bin"), new byte[64]);
        assertThatThrownBy(() -> Tokenizers.fromGguf(notGguf)).isInstanceOf(IOException.class);
        Map<String, Object> metadata = TokenizersTest.tinySpm();
        metadata.put("tokenizer.ggml.model", "rwkv");
        Path file = dir.resolve("rwkv.gguf");
        write(metadata, file);
        assertThatThrownBy(() -> Tokenizers.fromGguf(file)).hasMessageContaining("'rwkv'");
    }

    static List<Object> list(Object... values) {
        return new ArrayList<>(List.of(values));
    }
}
