package dev.ripcord.stack.storm;

import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How the storm names an error answer's kind, and classifies an answer, for the fault bench's gates. */
class StormKindTest {

    private static Outcome transport(String failure) {
        return new Outcome("r", -1, "", 0, null, null, false, false, failure, -1);
    }

    @Test
    void aRefusedConnectionIsNamedByItsCauseNotByTheFutureThatWrapsIt() {
        assertThat(Storm.kind(transport("java.util.concurrent.CompletionException: java.net.ConnectException")))
                .isEqualTo("transport ConnectException");
        assertThat(Storm.kind(transport("java.net.ConnectException"))).isEqualTo("transport ConnectException");
        assertThat(Storm.kind(transport("java.util.concurrent.CompletionException: java.io.IOException: closed")))
                .isEqualTo("transport IOException");
    }

    @Test
    void errorsAreNamedByStatusAndCodeAndAStreamsErrorEventByItsCode() {
        Outcome http = new Outcome("r", 500, "", 0, null,
                "{\"error\":{\"message\":\"m\",\"type\":\"server_error\",\"code\":\"internal_error\"}}", false, false,
                null, -1);
        Outcome stream = new Outcome("r", 200, "ab", 2, null,
                "{\"message\":\"m\",\"type\":\"server_error\",\"code\":\"internal_error\"}", true, false, null, -1);
        assertThat(Storm.kind(http)).isEqualTo("500 internal_error");
        assertThat(Storm.kind(stream)).isEqualTo("stream internal_error");
        assertThat(Storm.classify(stream, true)).isEqualTo(Storm.Result.FAILED);
    }

    @Test
    void aStreamWithAnEventAfterItsDoneIsAFailureOfItsOwnKind() {
        Outcome twoTerminalFrames = new Outcome("r", 200, "ab", 2, "stop",
                "{\"error\":{\"code\":\"" + dev.ripcord.stack.cancel.StreamingClient.EVENT_AFTER_DONE
                        + "\",\"message\":\"an event after [DONE]\"}}", true, false, null, 2);
        assertThat(Storm.classify(twoTerminalFrames, true)).isEqualTo(Storm.Result.FAILED);
        assertThat(Storm.kind(twoTerminalFrames)).isEqualTo("stream event_after_done");
    }

    @Test
    void onlyTheApisCancelledAnswerCountsAsCancelled() {
        Outcome conflict = new Outcome("r", 409, "", 0, null,
                "{\"error\":{\"code\":\"request_cancelled\"}}", false, false, null, -1);
        Outcome timeout = new Outcome("r", 504, "", 0, null, "{\"error\":{\"code\":\"timeout\"}}", false, false,
                null, -1);
        Outcome abort = new Outcome("r", 200, "ab", 2, "abort", null, true, false, null, -1);
        Outcome abortWithoutDone = new Outcome("r", 200, "ab", 2, "abort", null, false, false, null, -1);
        assertThat(Storm.classify(conflict, false)).isEqualTo(Storm.Result.FAILED);
        assertThat(Storm.classify(timeout, false)).isEqualTo(Storm.Result.FAILED);
        assertThat(Storm.classify(abort, true)).isEqualTo(Storm.Result.CANCELLED);
        assertThat(Storm.classify(abortWithoutDone, true)).isEqualTo(Storm.Result.FAILED);
        assertThat(Storm.kind(abortWithoutDone)).isEqualTo("200 no [DONE]");
    }
}
