package dev.ripcord.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestPathsTest {

    @ParameterizedTest
    @ValueSource(strings = {"/", "/v1/completions", "/v1/requests/req-1.2:x_y/cancel", "/internal/v1/journal",
            "/actuator/health", "/v1/", "/health"})
    void plainPathsAreTheirOwnCanonicalForm(String path) {
        assertThat(RequestPaths.canonical(path)).contains(path);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            // matrix parameters: the router strips them, a raw prefix test does not
            "/v1;x/completions", "/v1/completions;x", "/internal;x/v1/journal", ";/v1/completions",
            // escaped letters, digits, unreserved characters and separators
            "/%76%31/completions", "/%69nternal/v1/journal", "/v%31/completions", "/v1%2Fcompletions",
            "/v1%2fcompletions", "/%2e%2e/v1/completions", "/v1/%2e/completions", "/v1%5Ccompletions",
            "/v1%3Bx/completions", "/v1%25/completions", "/v1/%7e", "/v1/%5F", "/v1/%2D", "/v1/%00",
            // malformed escapes
            "/v1/%", "/v1/%7", "/v1/%zz", "/v1/%\u0663\u0663",
            // dot segments and empty segments
            "/v1/../internal/v1/journal", "/x/../v1/completions", "/./v1/completions", "/v1/.", "/v1/..",
            "//v1/completions", "/v1//completions",
            // backslashes, controls, raw non-ASCII, relative
            "/v1\\completions", "/v1/\tcompletions", "/v1/\u00e9", "v1/completions", ""})
    void ambiguousPathsAreRefused(String path) {
        assertThat(RequestPaths.canonical(path)).as(path).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"/v1/models/a%20b", "/v1/models/a%3Ab", "/v1/models/%C3%A9"})
    void otherEscapesAreDecodedAsTheRouterDecodesThem(String path) {
        assertThat(RequestPaths.canonical(path)).isPresent().get().asString().doesNotContain("%");
    }

    @org.junit.jupiter.api.Test
    void invalidUtf8IsRefused() {
        assertThat(RequestPaths.canonical("/v1/%C3")).isEmpty();
        assertThat(RequestPaths.canonical("/v1/%FF")).isEmpty();
    }

    @org.junit.jupiter.api.Test
    void isUnderComparesWholeSegments() {
        assertThat(RequestPaths.isUnder("/v1", "/v1")).isTrue();
        assertThat(RequestPaths.isUnder("/v1/completions", "/v1")).isTrue();
        assertThat(RequestPaths.isUnder("/v1x/completions", "/v1")).isFalse();
        assertThat(RequestPaths.isUnder("/internal/v1/journal", "/internal")).isTrue();
        assertThat(RequestPaths.isUnder("/internalx", "/internal")).isFalse();
    }
}
