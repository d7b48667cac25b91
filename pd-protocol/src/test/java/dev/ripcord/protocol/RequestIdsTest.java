package dev.ripcord.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestIdsTest {

    @ParameterizedTest
    @ValueSource(strings = {"a", "req-1", "A.b_c:d-9", "0123456789"})
    void acceptsIdsMadeOfTheAllowedAlphabet(String id) {
        assertThat(RequestIds.isValid(id)).isTrue();
        assertThat(RequestIds.require(id)).isEqualTo(id);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "req 1", "req/1", "req*", "é", "req-1\n", "a,b"})
    void rejectsIdsOutsideTheAlphabet(String id) {
        assertThat(RequestIds.isValid(id)).isFalse();
        assertThatThrownBy(() -> RequestIds.require(id)).isInstanceOf(InvalidRequestIdException.class)
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void acceptsExactly128CharactersAndRejects129() {
        assertThat(RequestIds.isValid("x".repeat(128))).isTrue();
        assertThatThrownBy(() -> RequestIds.require("x".repeat(129)))
                .hasMessageContaining("129 characters, at most 128");
    }

    @Test
    void rejectsNullWithAClearMessage() {
        assertThat(RequestIds.isValid(null)).isFalse();
        assertThatThrownBy(() -> RequestIds.require(null)).hasMessage("request ID is missing");
    }

    @Test
    void errorNamesTheOffendingCharacterAndIsStackless() {
        InvalidRequestIdException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidRequestIdException.class,
                () -> RequestIds.require("req/1"));
        assertThat(e.getMessage()).contains("U+002F", "index 3");
        assertThat(e.getStackTrace()).isEmpty();
    }

    @Test
    void generatedIdsHaveTheDocumentedFormatAndAreValidAndDistinct() {
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            String id = RequestIds.newId();
            assertThat(id).matches(RequestIds.GENERATED_PATTERN).startsWith(RequestIds.PREFIX)
                    .hasSize(RequestIds.PREFIX.length() + RequestIds.RANDOM_LENGTH);
            assertThat(RequestIds.isValid(id)).isTrue();
            assertThat(seen.add(id)).as("duplicate %s", id).isTrue();
        }
    }

    @Test
    void controlCharactersOfARejectedIdAreEscapedInTheMessage() {
        assertThatThrownBy(() -> RequestIds.require("a\r\nb")).hasMessageContaining("a\\u000D\\u000Ab")
                .hasMessageNotContaining("\n");
    }

    @Test
    void headerAndContextKeyAreTheOnesEveryServiceUses() {
        assertThat(RequestIds.HEADER).isEqualTo("X-Request-Id");
        assertThat(RequestIds.CONTEXT_KEY).isEqualTo("requestId");
    }
}
