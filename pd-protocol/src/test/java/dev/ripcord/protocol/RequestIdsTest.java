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

    @Test
    void generatedAndInternalIdsComeFromASecureRandomNotAPredictableOne() {
        // Regression: IDs came from ThreadLocalRandom, whose output is predictable from a few IDs a client has seen.
        java.util.List<Class<?>> randoms = java.util.Arrays.stream(RequestIds.class.getDeclaredFields())
                .filter(f -> java.lang.reflect.Modifier.isStatic(f.getModifiers()))
                .map(java.lang.reflect.Field::getType)
                .filter(java.util.Random.class::isAssignableFrom)
                .toList();
        assertThat(randoms).containsExactly(java.security.SecureRandom.class);
    }

    @Test
    void anInternalIdIsTheClientsIdAndAFreshRandomPartEveryTime() {
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            String internal = RequestIds.internalId("reuse-1");
            assertThat(internal).matches("reuse-1:[A-Za-z0-9]{22}");
            assertThat(RequestIds.isValid(internal)).isTrue();
            assertThat(seen.add(internal)).as("duplicate %s", internal).isTrue();
        }
    }

    @Test
    void theLongestClientIdStillGivesAValidInternalIdWithAFourDigitChoice() {
        String internal = RequestIds.internalId("x".repeat(RequestIds.MAX_LENGTH));
        assertThat(internal).startsWith("x".repeat(RequestIds.INTERNAL_CLIENT_PART) + ":");
        assertThat(RequestIds.isValid(RequestIds.choiceId(internal, 9999))).isTrue();
    }

    @Test
    void noClientIdCanMakeItsRequestsInternalIdEqualAnotherRequestsChoiceId() {
        // Regression: choice IDs were ID + "." + i, and "." is legal in client IDs: one key's "x" with n=2 had a
        // choice "x.1", the very ID another key's request "x.1" was known by.
        String first = RequestIds.internalId("x");
        String second = RequestIds.internalId(RequestIds.choiceId(first, 1));
        assertThat(RequestIds.choiceId(first, 0)).isEqualTo(first);
        assertThat(second).isNotEqualTo(RequestIds.choiceId(first, 1));
        assertThat(RequestIds.choiceId(second, 1)).isNotEqualTo(RequestIds.choiceId(first, 1));
        assertThat(RequestIds.internalId("x.1")).isNotEqualTo(RequestIds.choiceId(RequestIds.internalId("x"), 1))
                .doesNotEndWith(".1");
    }

    @Test
    void namesMatchesTheInternalIdsAndChoicesMintedForAClientIdAndNothingElse() {
        String internal = RequestIds.internalId("story-1");
        assertThat(RequestIds.names("story-1", internal)).isTrue();
        assertThat(RequestIds.names("story-1", RequestIds.choiceId(internal, 1)))
                .isTrue();
        assertThat(RequestIds.names(internal, internal)).isTrue();
        assertThat(RequestIds.names(internal, RequestIds.choiceId(internal, 2)))
                .isTrue();
        // Another client ID that merely starts alike, or one with the same prefix and separator, is not named.
        assertThat(RequestIds.names("story", internal)).isFalse();
        assertThat(RequestIds.names("story-12", internal)).isFalse();
        assertThat(
                RequestIds.names("story-1", RequestIds.internalId("story-1:x"))).isFalse();
        assertThat(RequestIds.names("story-1", "story-1:short")).isFalse();
        assertThat(RequestIds.names("story-1", null)).isFalse();
    }
}
