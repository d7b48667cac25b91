package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelReason;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;

import dev.ripcord.cancel.InvalidCancelEventException.Problem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CancelEventCodecTest {

    private static final CancelEvent EVENT = CancelEvent.of("req-42", CancelReason.CLIENT_DISCONNECT,
            new Origin("gateway", "a1b2c3"), Instant.parse("2026-11-29T21:00:00.123Z"));

    private static final String VALID = """
            {"schemaVersion":1,"requestId":"req-42","reason":"CLIENT_DISCONNECT",
             "origin":{"service":"gateway","instance":"a1b2c3"},"timestamp":"2026-11-29T21:00:00.123Z"}""";

    @Test
    void roundTripsEveryField() {
        assertThat(CancelEventCodec.decode(CancelEventCodec.encode(EVENT))).isEqualTo(EVENT);
    }

    @Test
    void encodesTheDocumentedWireForm() {
        assertThat(new String(CancelEventCodec.encode(EVENT), UTF_8)).isEqualTo(VALID.replace("\n ", ""));
    }

    @Test
    void ignoresUnknownFieldsFromNewerProducers() {
        String newer = VALID.replace("\"reason\"", "\"priority\":7,\"extra\":{\"a\":[1,2]},\"reason\"");
        assertThat(CancelEventCodec.decode(newer.getBytes(UTF_8))).isEqualTo(EVENT);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            garbage                  | not json at all                  | NOT_JSON
            empty                    |                                  | NOT_JSON
            JSON but not an object   | [1,2,3]                          | NOT_JSON
            trailing garbage         | {"schemaVersion":1} x            | NOT_JSON
            missing schemaVersion    | {"requestId":"req-42"}           | MISSING_FIELD
            unknown schemaVersion    | {"schemaVersion":2}              | UNSUPPORTED_SCHEMA_VERSION
            schemaVersion as string  | {"schemaVersion":"1"}            | INVALID_FIELD
            """)
    void rejectsMalformedRecords(String description, String json, Problem expected) {
        byte[] bytes = json == null ? new byte[0] : json.getBytes(UTF_8);
        assertThatThrownBy(() -> CancelEventCodec.decode(bytes))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(expected));
    }

    @ParameterizedTest(name = "without {0}")
    @CsvSource({"requestId", "reason", "origin", "timestamp"})
    void rejectsAMissingRequiredFieldNamingIt(String field) {
        String json = VALID.replaceAll(",\\s*\"" + field + "\":(\\{[^}]*}|\"[^\"]*\")", "");
        assertThatThrownBy(() -> CancelEventCodec.decode(json.getBytes(UTF_8)))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.MISSING_FIELD))
                .hasMessage("missing required field '%s'", field);
    }

    @Test
    void rejectsAnInvalidRequestId() {
        String json = VALID.replace("req-42", "req 42");
        assertThatThrownBy(() -> CancelEventCodec.decode(json.getBytes(UTF_8)))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.INVALID_REQUEST_ID));
    }

    @Test
    void rejectsAnUnknownReasonRatherThanGuessing() {
        String json = VALID.replace("CLIENT_DISCONNECT", "SOLAR_FLARE");
        assertThatThrownBy(() -> CancelEventCodec.decode(json.getBytes(UTF_8)))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.INVALID_FIELD))
                .hasMessageContaining("SOLAR_FLARE");
    }

    @Test
    void rejectsATimestampThatIsNotAnInstant() {
        String json = VALID.replace("2026-11-29T21:00:00.123Z", "yesterday");
        assertThatThrownBy(() -> CancelEventCodec.decode(json.getBytes(UTF_8)))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.INVALID_FIELD));
    }

    @Test
    void bytesAreReadAsUtf8NeverGuessed() {
        // Jackson would auto-detect UTF-16 here and report garbage as CJK text; the wire format is UTF-8 only.
        assertThatThrownBy(() -> CancelEventCodec.decode(VALID.getBytes(java.nio.charset.StandardCharsets.UTF_16BE)))
                .isInstanceOfSatisfying(InvalidCancelEventException.class,
                        e -> assertThat(e.problem()).isEqualTo(Problem.NOT_JSON))
                .message().matches("[\\x20-\\x7e]+");
    }

    @Test
    void decodingErrorsAreStackless() {
        InvalidCancelEventException e = org.junit.jupiter.api.Assertions.assertThrows(
                InvalidCancelEventException.class, () -> CancelEventCodec.decode("nope".getBytes(UTF_8)));
        assertThat(e.getStackTrace()).isEmpty();
    }
}
