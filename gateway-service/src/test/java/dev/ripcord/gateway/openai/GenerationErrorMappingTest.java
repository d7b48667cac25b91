package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.DuplicateRequestIdException;
import dev.ripcord.gateway.generation.GenerationException;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import tools.jackson.databind.JsonNode;

/**
 * The one table from the serving core's failures to what an OpenAI client sees: status, {@code type}, {@code code},
 * {@code param}, {@code Retry-After} and message. These are the answers the gateway gave before the core stopped
 * speaking OpenAI; a change here is a change of the public API.
 */
class GenerationErrorMappingTest {

    record Row(GenerationException failure, int status, String type, String code, @Nullable String param,
               @Nullable String retryAfter, String message) {
        @Override
        public String toString() {
            return failure.getClass().getSimpleName() + " -> " + status + " " + code;
        }
    }

    static final List<Row> table = List.of(
            new Row(RequestCancelledException.of("r-1", CancelReason.CLIENT_CANCEL), 409, "invalid_request_error",
                    "request_cancelled", null, null, "request r-1 was cancelled (client_cancel)"),
            new Row(new RequestCancelledException("r-2", "explicit via kafka"), 409, "invalid_request_error",
                    "request_cancelled", null, null, "request r-2 was cancelled (explicit via kafka)"),
            new Row(new DeadlineExceededException("r-3"), 504, "server_error", "timeout", "timeout", null,
                    "request r-3 ran past its deadline"),
            new Row(new WorkerUnavailableException("the decode workers are at capacity; retry after 2 s",
                    Duration.ofSeconds(2), null), 503, "server_error", "service_unavailable", null, "2",
                    "the decode workers are at capacity; retry after 2 s"),
            new Row(new WorkerUnavailableException("no prefill worker is available; retry after 2 s",
                    Duration.ofMillis(1500), new IllegalStateException("127.0.0.1:8081 refused")), 503,
                    "server_error", "service_unavailable", null, "2", "no prefill worker is available; retry after 2 s"),
            new Row(new GenerationFailedException("the decode worker failed this request",
                    new IllegalStateException("decode-7.internal:8082 broke")), 500, "server_error", "internal_error",
                    null, null, "the decode worker failed this request"),
            new Row(new DuplicateRequestIdException("r-4"), 409, "invalid_request_error", "duplicate_request_id", null,
                    null, "a request with id r-4 is already in flight"));

    @ParameterizedTest(name = "{0}")
    @FieldSource("table")
    void eachFailureOfTheCoreHasItsOpenAiError(Row row) {
        ApiException error = OpenAiErrorHandler.toApiException(row.failure(), null, "req-under-test");

        assertThat(error.getStatusCode().value()).isEqualTo(row.status());
        assertThat(error.errorCode().type()).isEqualTo(row.type());
        assertThat(error.errorCode().code()).isEqualTo(row.code());
        assertThat(error.param()).isEqualTo(row.param());
        assertThat(error.getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo(row.retryAfter());
        assertThat(error.message()).isEqualTo(row.message()).doesNotContain("127.0.0.1", "decode-7");
        assertThat(error.getCause()).as("the core's failure is kept for the logs").isSameAs(row.failure());
        JsonNode body = OpenAiJson.errorBody(error).get("error");
        assertThat(body.get("type").stringValue()).isEqualTo(row.type());
        assertThat(body.get("code").stringValue()).isEqualTo(row.code());
        assertThat(body.get("message").stringValue()).isEqualTo(row.message());
    }

    @Test
    void theTableCoversEveryKindOfFailure() {
        List<Class<?>> mapped = table.stream().<Class<?>>map(row -> row.failure().getClass()).distinct().toList();
        assertThat(mapped).containsExactlyInAnyOrder(GenerationException.class.getPermittedSubclasses());
    }

    @Test
    void anythingElseIsA500ThatQuotesTheRequestIdAndNothingElse() {
        ApiException error = OpenAiErrorHandler.toApiException(
                new IllegalStateException("decode-7.internal:8082 refused"), null, "req-abc");

        assertThat(error.errorCode()).isEqualTo(ErrorCode.INTERNAL_ERROR);
        assertThat(error.message()).contains("req-abc").doesNotContain("decode-7");
    }
}
