package dev.ripcord.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The pre-tokenizer splits. No published split vectors exist for these regexes, so the expected words here are
 * derived by hand from the regex definitions (llama.cpp's llama-vocab.cpp, the models' tokenizer.json); each case
 * is chosen to exercise one alternative that distinguishes the pre-tokenizers.
 */
class PreTokenizerTest {
    static final String TEXT = "Hello world's 12345 ok!!\n\n  x";

    @Test
    void llama3GroupsDigitsByThreeAndKeepsNewlinesAfterPunctuation() {
        assertThat(PreTokenizer.LLAMA3.split(TEXT))
                .containsExactly("Hello", " world", "'s", " ", "123", "45", " ok", "!!\n\n", " ", " x");
    }

    @Test
    void qwen2SplitsEveryDigit() {
        assertThat(PreTokenizer.QWEN2.split(TEXT))
                .containsExactly("Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " ok", "!!\n\n", " ", " x");
    }

    @Test
    void smollmIsolatesDigitsThenSplitsLikeGpt2() {
        assertThat(PreTokenizer.SMOLLM.split(TEXT))
                .containsExactly("Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " ok", "!!", "\n\n ", " x");
    }

    @Test
    void gpt2KeepsASpaceWithTheNumberAndPunctuationApartFromNewlines() {
        assertThat(PreTokenizer.GPT2.split(TEXT))
                .containsExactly("Hello", " world", "'s", " 12345", " ok", "!!", "\n\n ", " x");
    }

    @Test
    void contractionsAreCaseInsensitiveOnlyWhereTheModelSaysSo() {
        assertThat(PreTokenizer.LLAMA3.split("DON'T")).containsExactly("DON", "'T");
        assertThat(PreTokenizer.QWEN2.split("DON'T")).containsExactly("DON", "'T");
        assertThat(PreTokenizer.GPT2.split("DON'T")).containsExactly("DON", "'", "T");
    }

    @Test
    void whiteSpaceIsUnicodeWhiteSpaceNotJavasAsciiDefault() {
        // U+3000 IDEOGRAPHIC SPACE: with ASCII \s it would fall into the punctuation alternative as one piece.
        assertThat(PreTokenizer.LLAMA3.split("a\u3000\u3000b")).containsExactly("a", "\u3000", "\u3000b");
    }

    @Test
    void qwen2NormalizesToNfcFirst() {
        assertThat(PreTokenizer.QWEN2.split("e\u0301")).containsExactly("\u00e9");
        assertThat(PreTokenizer.LLAMA3.split("e\u0301")).containsExactly("e", "\u0301"); // a mark is no letter
    }

    @Test
    void theWordsConcatenateToTheText() {
        String text = "  Mixed 𝔘nicode — ñ, 漢字 and digits ١٢٣ (Arabic-Indic)\r\n\ttabs  ";
        for (PreTokenizer p : PreTokenizer.values()) {
            assertThat(String.join("", p.split(text))).as(p.name()).isEqualTo(text);
        }
    }

    @Test
    void anUnknownGgufPreTokenizerIsNamed() {
        assertThat(PreTokenizer.byGgufName("llama-bpe")).isEqualTo(PreTokenizer.LLAMA3);
        assertThat(PreTokenizer.byGgufName(null)).isEqualTo(PreTokenizer.GPT2);
        assertThatThrownBy(() -> PreTokenizer.byGgufName("deepseek-coder"))
                .hasMessageContaining("'deepseek-coder'").hasMessageContaining("qwen2");
    }
}
