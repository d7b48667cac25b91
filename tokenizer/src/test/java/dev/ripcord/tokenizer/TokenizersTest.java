package dev.ripcord.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

class TokenizersTest {

    /** A tiny SentencePiece vocabulary: unk, BOS, EOS, a control token, 256 bytes, then pieces with scores. */
    static Map<String, Object> tinySpm() {
        List<String> pieces = List.of("▁", "a", "b", "▁a", "ab", "▁ab", "<|end|>");
        java.util.ArrayList<Object> tokens = new java.util.ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        java.util.ArrayList<Object> types = new java.util.ArrayList<>(List.of(2L, 3L, 3L));
        java.util.ArrayList<Object> scores = new java.util.ArrayList<>(List.of(0f, 0f, 0f));
        for (int b = 0; b < 256; b++) {
            tokens.add("<0x%02X>".formatted(b));
            types.add(6L);
            scores.add(0f);
        }
        for (int i = 0; i < pieces.size(); i++) {
            tokens.add(pieces.get(i));
            types.add(pieces.get(i).startsWith("<|") ? 3L : 1L);
            scores.add((float) -i);
        }
        Map<String, Object> m = new HashMap<>();
        m.put("tokenizer.ggml.model", "llama");
        m.put("tokenizer.ggml.tokens", tokens);
        m.put("tokenizer.ggml.scores", scores);
        m.put("tokenizer.ggml.token_type", types);
        return m;
    }

    static final int SPACE = 259;
    static final int A = 260;
    static final int SPACE_A = 262;
    static final int SPACE_AB = 264;
    static final int END = 265;

    @Test
    void sentencePieceMergesByScoreFallsBackToBytesAndPrefixesASpace() {
        Tokenizer t = Tokenizers.fromGgufMetadata(tinySpm());
        assertThat(t.encode("ab", true)).containsExactly(1, SPACE_AB);
        assertThat(t.encode("a\n", false)).containsExactly(SPACE_A, 3 + '\n');
        assertThat(t.encode("é", false)).containsExactly(SPACE, 3 + 0xC3, 3 + 0xA9);
        assertThat(t.encode("", true)).containsExactly(1);
        assertThat(t.decode(t.encode("ab a\n", true))).isEqualTo("ab a\n");
    }

    @Test
    void specialTokenTextIsOneTokenOnlyWhenAskedAndTheNextFragmentGetsTheSpacePrefix() {
        Tokenizer t = Tokenizers.fromGgufMetadata(tinySpm());
        assertThat(t.encode("a<|end|>a", false, true)).containsExactly(SPACE_A, END, SPACE_A);
        assertThat(t.encode("a<|end|>a", false, false)).doesNotContain(END);
        assertThat(t.stopTokens()).containsExactly(2, END); // EOS, and <|end|> as a well-known end of turn
        assertThat(t.tokenText(END)).isEqualTo("<|end|>");
        assertThat(t.decode(new int[] {SPACE_A, END})).isEqualTo(" a");
    }

    @Test
    void withoutScoresEveryMergeTiesAndTheLeftmostGoesFirstAsInLlamaCpp() {
        Map<String, Object> m = tinySpm();
        m.remove("tokenizer.ggml.scores");
        Tokenizer t = Tokenizers.fromGgufMetadata(m);
        assertThat(t.encode("ab", false)).containsExactly(SPACE_AB); // ▁a first (leftmost), then ▁ab
    }

    @Test
    void addSpecialFollowsTheMetadataFlags() {
        Map<String, Object> m = tinySpm();
        m.put("tokenizer.ggml.add_bos_token", false);
        m.put("tokenizer.ggml.add_eos_token", true);
        m.put("tokenizer.ggml.add_space_prefix", false);
        Tokenizer t = Tokenizers.fromGgufMetadata(m);
        assertThat(t.encode("a", true, false)).containsExactly(A, 2);
    }

    @Test
    void malformedMetadataIsAnErrorNamingTheKey() {
        Map<String, Object> m = tinySpm();
        m.put("tokenizer.ggml.model", "bert");
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(m)).hasMessageContaining("'bert'");
        m.put("tokenizer.ggml.model", "gpt2");
        m.put("tokenizer.ggml.pre", "chatglm-bpe");
        m.put("tokenizer.ggml.merges", List.of());
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(m)).hasMessageContaining("'chatglm-bpe'");
        Map<String, Object> noTokens = tinySpm();
        noTokens.remove("tokenizer.ggml.tokens");
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(noTokens)).hasMessageContaining("tokenizer.ggml.tokens");
        Map<String, Object> shortScores = tinySpm();
        shortScores.put("tokenizer.ggml.scores", List.of(0f));
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(shortScores)).hasMessageContaining("tokenizer.ggml.scores");
        Map<String, Object> intBos = tinySpm();
        intBos.put("tokenizer.ggml.bos_token_id", 1); // an Integer, not the contract's Long
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(intBos))
                .hasMessageContaining("tokenizer.ggml.bos_token_id").hasMessageContaining("Integer");
        Map<String, Object> shortTypes = tinySpm();
        shortTypes.put("tokenizer.ggml.token_type", List.of(1L));
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(shortTypes)).hasMessageContaining("token_type");
        assertThatThrownBy(() -> Tokenizers.fromGgufMetadata(Map.of())).hasMessageContaining("tokenizer.ggml.model");
    }

    /**
     * Qwen2 has no published token-id vectors reachable here, so this checks properties on its real vocabulary:
     * exact round trips (of the NFC form), special-token parsing by id, and the stop set.
     */
    @Test
    void qwen2VocabularyRoundTripsAndParsesItsChatTokens() {
        Tokenizer qwen = Tokenizers.fromGgufMetadata(PublishedVocabularies.qwen());
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 200; i++) {
            String text = TokenizerTest.randomText(random, 1 + random.nextInt(40));
            String nfc = java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFC);
            assertThat(qwen.decode(qwen.encode(text, false))).isEqualTo(nfc);
        }
        int[] chat = qwen.encode("<|im_start|>user\nHi<|im_end|>\n", true, true);
        assertThat(chat[0]).isEqualTo(151_644);
        assertThat(chat).contains(151_645).doesNotContain(151_643); // add_bos_token false
        assertThat(qwen.encode("<|im_start|>", false, false)).doesNotContain(151_644);
        assertThat(qwen.encode("<think>", false, false)).containsExactly(151_667); // user-defined: always whole
        assertThat(qwen.stopTokens()).contains(151_643, 151_645);
    }
}
