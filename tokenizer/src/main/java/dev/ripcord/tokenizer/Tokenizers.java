package dev.ripcord.tokenizer;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.ripcord.format.gguf.GgufFile;

/**
 * Builds a model's tokenizer from its GGUF metadata.
 *
 * <p>The metadata map follows the GGUF reader's contract: every integer type is a {@link Long}, f32 a
 * {@link Float}, f64 a {@link Double}, bool a {@link Boolean}, string a {@link String}, and an array a
 * {@code List<Object>} of those. Keys read:
 * <ul>
 * <li>{@code tokenizer.ggml.model}: {@code llama} (SentencePiece-style, {@link SentencePieceTokenizer}: needs
 * {@code .tokens}; optional {@code .scores} (0 without), {@code .token_type} (normal without) and
 * {@code .add_space_prefix} (default true)) or {@code gpt2} (byte-level BPE, {@link ByteLevelBpeTokenizer}: needs
 * {@code .tokens} and {@code .merges}; optional {@code .token_type}, and {@code .pre} choosing the
 * {@link PreTokenizer}).
 * <li>{@code tokenizer.ggml.bos_token_id}, {@code eos_token_id}, {@code eot_token_id}, {@code eom_token_id},
 * {@code unknown_token_id}, {@code padding_token_id}, {@code add_bos_token}, {@code add_eos_token}.
 * </ul>
 * Defaults where a key is absent: for {@code llama}, BOS 1, EOS 2, unknown 0 and add BOS (llama.cpp's); for
 * {@code gpt2}, no BOS, EOS or unknown (-1: llama.cpp's GPT-2 defaults fit GPT-2 alone) and no BOS added.
 * Anything else a tokenizer needs and lacks, an unknown model or pre-tokenizer, or a value of the wrong type is an
 * {@link IllegalArgumentException} naming the key.
 */
public final class Tokenizers {
    private static final String PREFIX = "tokenizer.ggml.";

    private Tokenizers() {
    }

    /**
     * The tokenizer of a GGUF file, from its metadata only (the tensors are not read).
     *
     * @throws java.io.IOException if the file is not GGUF or is malformed (the message names it)
     * @throws IllegalArgumentException if its tokenizer metadata is unsupported or inconsistent (naming the key)
     */
    public static Tokenizer fromGguf(Path file) throws IOException {
        try (GgufFile gguf = GgufFile.open(file)) {
            return fromGgufMetadata(gguf.metadata());
        }
    }

    /** The model's own chat template ({@code tokenizer.chat_template}), if the metadata has one. */
    public static Optional<String> chatTemplate(Map<String, Object> metadata) {
        return metadata.get("tokenizer.chat_template") instanceof String template ? Optional.of(template)
                : Optional.empty();
    }

    /** The tokenizer the metadata describes. */
    public static Tokenizer fromGgufMetadata(Map<String, Object> metadata) {
        String model = string(metadata, PREFIX + "model", null);
        if (model == null) {
            throw new IllegalArgumentException("GGUF metadata has no tokenizer.ggml.model; cannot build a tokenizer");
        }
        List<String> tokens = strings(metadata, PREFIX + "tokens");
        int[] types = tokenTypes(metadata, tokens.size());
        String[] texts = tokens.toArray(String[]::new);
        return switch (model) {
            case "llama" -> {
                // Optional as in llama.cpp: without scores every merge ties and the leftmost goes first.
                float[] scores = metadata.containsKey(PREFIX + "scores") ? floats(metadata, PREFIX + "scores",
                        tokens.size()) : new float[tokens.size()];
                SpecialTokens special = specials(metadata, texts, types, 1, 2, 0, true);
                boolean spacePrefix = bool(metadata, PREFIX + "add_space_prefix", true);
                yield new SentencePieceTokenizer(new Vocabulary(texts, types, special), scores, spacePrefix);
            }
            case "gpt2" -> {
                PreTokenizer pre = PreTokenizer.byGgufName(string(metadata, PREFIX + "pre", null));
                List<String> merges = strings(metadata, PREFIX + "merges");
                SpecialTokens special = specials(metadata, texts, types, -1, -1, -1, false);
                yield new ByteLevelBpeTokenizer(new Vocabulary(texts, types, special), merges, pre);
            }
            default -> throw new IllegalArgumentException("unsupported tokenizer.ggml.model '%s'; supported: llama "
                    .formatted(model) + "(SentencePiece-style), gpt2 (byte-level BPE)");
        };
    }

    private static SpecialTokens specials(Map<String, Object> metadata, String[] texts, int[] types, int defaultBos,
            int defaultEos, int defaultUnknown, boolean defaultAddBos) {
        int bos = id(metadata, "bos_token_id", defaultBos);
        int eos = id(metadata, "eos_token_id", defaultEos);
        int eot = id(metadata, "eot_token_id", -1);
        int eom = id(metadata, "eom_token_id", -1);
        List<Integer> stop = new ArrayList<>(List.of(eos, eot, eom));
        for (int i = 0; i < texts.length; i++) {
            if (types[i] == Vocabulary.CONTROL && SpecialTokens.END_OF_TURN_TEXTS.contains(texts[i])) {
                stop.add(i);
            }
        }
        return new SpecialTokens(bos, eos, eot, eom, id(metadata, "unknown_token_id", defaultUnknown),
                id(metadata, "padding_token_id", -1), bool(metadata, PREFIX + "add_bos_token", defaultAddBos),
                bool(metadata, PREFIX + "add_eos_token", false),
                stop.stream().mapToInt(Integer::intValue).toArray());
    }

    private static int[] tokenTypes(Map<String, Object> metadata, int count) {
        String key = PREFIX + "token_type";
        if (!metadata.containsKey(key)) {
            int[] normal = new int[count];
            java.util.Arrays.fill(normal, Vocabulary.NORMAL);
            return normal;
        }
        List<?> list = list(metadata, key);
        requireSize(key, list, count);
        int[] types = new int[count];
        for (int i = 0; i < count; i++) {
            types[i] = Math.toIntExact(element(key, list, i, Long.class));
        }
        return types;
    }

    private static int id(Map<String, Object> metadata, String name, int fallback) {
        String key = PREFIX + name;
        Object value = metadata.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Long id)) {
            throw wrongType(key, "an integer", value);
        }
        return Math.toIntExact(id);
    }

    private static String string(Map<String, Object> metadata, String key, String fallback) {
        Object value = metadata.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof String s)) {
            throw wrongType(key, "a string", value);
        }
        return s;
    }

    private static boolean bool(Map<String, Object> metadata, String key, boolean fallback) {
        Object value = metadata.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Boolean b)) {
            throw wrongType(key, "a bool", value);
        }
        return b;
    }

    private static List<?> list(Map<String, Object> metadata, String key) {
        Object value = metadata.get(key);
        if (value == null) {
            throw new IllegalArgumentException("GGUF metadata lacks " + key + ", which this tokenizer needs");
        }
        if (!(value instanceof List<?> list)) {
            throw wrongType(key, "an array", value);
        }
        return list;
    }

    private static List<String> strings(Map<String, Object> metadata, String key) {
        List<?> list = list(metadata, key);
        List<String> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            out.add(element(key, list, i, String.class));
        }
        return out;
    }

    private static float[] floats(Map<String, Object> metadata, String key, int count) {
        List<?> list = list(metadata, key);
        requireSize(key, list, count);
        float[] out = new float[count];
        for (int i = 0; i < count; i++) {
            out[i] = element(key, list, i, Float.class);
        }
        return out;
    }

    private static <T> T element(String key, List<?> list, int i, Class<T> type) {
        Object value = list.get(i);
        if (!type.isInstance(value)) {
            throw wrongType(key + "[" + i + "]", "a " + type.getSimpleName(), value);
        }
        return type.cast(value);
    }

    private static void requireSize(String key, List<?> list, int count) {
        if (list.size() != count) {
            throw new IllegalArgumentException("%s has %d entries but tokenizer.ggml.tokens has %d"
                    .formatted(key, list.size(), count));
        }
    }

    private static IllegalArgumentException wrongType(String key, String expected, Object value) {
        return new IllegalArgumentException("GGUF metadata %s should be %s, got %s".formatted(key, expected,
                value == null ? "nothing" : value.getClass().getSimpleName()));
    }
}
