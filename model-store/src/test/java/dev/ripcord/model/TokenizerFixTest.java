package dev.ripcord.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

class TokenizerFixTest {

    @Test
    void rewritesIds3To258AsByteFallbackPiecesAndKeepsEverythingElse() {
        assertThat(TokenizerFix.fix(TestPackages.tokenizer(false))).isEqualTo(TestPackages.tokenizer(true));
    }

    @Test
    void anAlreadyFixedTokenizerIsUnchanged() {
        assertThat(TokenizerFix.fix(TestPackages.tokenizer(true))).isEqualTo(TestPackages.tokenizer(true));
    }

    @Test
    void aTruncatedTokenizerIsRejectedNamingTheToken() {
        byte[] old = TestPackages.tokenizer(false);
        assertThatThrownBy(() -> TokenizerFix.fix(Arrays.copyOf(old, old.length - 2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("truncated at token " + (TestPackages.TOKENS - 1));
    }
}
