package dev.ripcord.stack.cancel;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The storm's client reads a stream's terminal frame as the end of the answer: a stream with anything after its
 * {@code [DONE]} (a second {@code [DONE]}, say) is a broken answer, neither completed nor aborted.
 */
class StreamingClientTest {

    private static final String CHUNK = "{\"choices\":[{\"text\":\"%s\",\"index\":0,\"finish_reason\":%s}]}";

    @Test
    void aStreamWithOneTerminalFrameIsCompleted() throws Exception {
        Outcome outcome = answer(String.format(CHUNK, "Hi", "null"), String.format(CHUNK, "", "\"stop\""), "[DONE]");

        assertThat(outcome.completed()).isTrue();
        assertThat(outcome.error()).isNull();
        assertThat(outcome.text()).isEqualTo("Hi");
    }

    @Test
    void aStreamWithTwoTerminalFramesIsABrokenAnswerNamedSo() throws Exception {
        Outcome outcome = answer(String.format(CHUNK, "Hi", "null"), String.format(CHUNK, "", "\"stop\""), "[DONE]",
                "[DONE]");

        assertThat(outcome.completed()).isFalse();
        assertThat(outcome.aborted()).isFalse();
        assertThat(outcome.error()).contains(StreamingClient.EVENT_AFTER_DONE);
        assertThat(outcome.sawDone()).isTrue();
    }

    /** The outcome of a streamed request answered with {@code events}, one SSE data event each, on loopback. */
    private static Outcome answer(String... events) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/v1/completions", exchange -> {
            exchange.getRequestBody().readAllBytes();
            exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
            exchange.sendResponseHeaders(200, 0);
            try (OutputStream out = exchange.getResponseBody()) {
                for (String event : events) {
                    out.write(("data: " + event + "\n\n").getBytes(StandardCharsets.UTF_8));
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        server.start();
        try {
            StreamingClient client = new StreamingClient(
                    URI.create("http://127.0.0.1:" + server.getAddress().getPort()), null);
            return client.start(StreamingClient.completion("m", "p", 4, true), "r-1").outcome()
                    .get(30, TimeUnit.SECONDS);
        } finally {
            server.stop(0);
        }
    }
}
