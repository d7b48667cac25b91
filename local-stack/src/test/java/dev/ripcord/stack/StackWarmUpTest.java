package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The warm-up {@code ./ripcord up} runs before it says it is up, against a stub gateway (no stack). */
class StackWarmUpTest {

    private HttpServer server;
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    private final List<String> warmUpMarks = new CopyOnWriteArrayList<>();
    /** Streams the stub finished writing; a warm-up returns only after it has read every one to its end. */
    private final AtomicInteger streamsWritten = new AtomicInteger();

    private URI start(int completionStatus) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> handle(exchange, completionStatus));
        server.start();
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private void handle(HttpExchange exchange, int completionStatus) throws IOException {
        String path = exchange.getRequestURI().getPath();
        calls.computeIfAbsent(exchange.getRequestMethod() + " " + path, k -> new AtomicInteger()).incrementAndGet();
        authorizations.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
        if (!path.equals("/v1/models")) {
            warmUpMarks.add(String.valueOf(exchange.getRequestHeaders().getFirst(StackWarmUp.WARM_UP_HEADER)));
        }
        if (path.equals("/v1/models")) {
            reply(exchange, 200, "{\"object\":\"list\",\"data\":[{\"id\":\"stub-model\",\"object\":\"model\"}]}");
            return;
        }
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        bodies.add(body);
        if (completionStatus != 200) {
            reply(exchange, completionStatus, "{\"error\":{\"message\":\"no\"}}");
            return;
        }
        if (body.contains("\"stream\":true")) {
            exchange.sendResponseHeaders(200, 0);
            try (OutputStream out = exchange.getResponseBody()) {
                for (int i = 0; i < 8; i++) {
                    out.write("data: {\"choices\":[{\"text\":\"x\"}]}\n\n".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                }
                out.write("data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII));
            }
            streamsWritten.incrementAndGet();
        } else {
            reply(exchange, 200, "{\"choices\":[{\"text\":\"xxxxxxxx\"}]}");
        }
    }

    private static void reply(HttpExchange exchange, int status, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    @Test
    void everyRoundSendsSpreadStreamsAPlainCompletionAndAChatThroughTheGatewayAndReadsThemToTheEnd()
            throws IOException {
        URI gateway = start(200);

        StackWarmUp.Result result = new StackWarmUp("key-1").run(List.of(gateway), 3, 2, StackWarmUp.DEFAULT_BUDGET);

        assertThat(result.failures()).isEmpty();
        assertThat(result.answered()).isEqualTo(3 * (2 + 2));
        assertThat(result.rounds()).isEqualTo(3);
        assertThat(calls.get("GET /v1/models").get()).isEqualTo(1);
        assertThat(calls.get("POST /v1/completions").get()).isEqualTo(3 * 3);
        assertThat(calls.get("POST /v1/chat/completions").get()).isEqualTo(3);
        // Returned only after every stream was written to its end (and read: the client reads to EOF).
        assertThat(streamsWritten.get()).isEqualTo(3 * (2 + 1));
        assertThat(bodies).allSatisfy(body -> assertThat(body).contains("\"model\":\"stub-model\""));
        // Marked, so that the gateway keeps them out of the user's metrics and audit counts.
        assertThat(warmUpMarks).hasSize(3 * (2 + 2)).containsOnly("1");
        assertThat(authorizations).containsOnly("Bearer key-1");
    }

    @Test
    void onceTheBudgetIsSpentNoFurtherRoundStartsButTheFirstAlwaysRuns() throws IOException {
        URI gateway = start(200);

        StackWarmUp.Result result = new StackWarmUp(null).run(List.of(gateway), 5, 2, Duration.ZERO);

        assertThat(result.rounds()).isEqualTo(1);
        assertThat(result.answered()).isEqualTo(2 + 2);
        assertThat(calls.get("POST /v1/chat/completions").get()).isEqualTo(1);
        assertThat(result.failures()).isEmpty();
    }

    @Test
    void aStackThatIsStoppingGetsNoFurtherRound() throws IOException {
        URI gateway = start(200);

        StackWarmUp.Result result = new StackWarmUp(null).run(List.of(gateway), 5, 2, StackWarmUp.DEFAULT_BUDGET,
                () -> true);

        assertThat(result.rounds()).isZero();
        assertThat(result.answered()).isZero();
        assertThat(calls).doesNotContainKey("POST /v1/completions");
    }

    @Test
    void aRefusedRequestIsReportedNotRetried() throws IOException {
        URI gateway = start(503);

        StackWarmUp.Result result = new StackWarmUp(null).run(List.of(gateway), 1, 1, StackWarmUp.DEFAULT_BUDGET);

        assertThat(result.answered()).isZero();
        assertThat(result.failures()).hasSize(3).allSatisfy(f -> assertThat(f).contains("answered 503"));
        assertThat(calls.get("POST /v1/completions").get()).isEqualTo(2);
        assertThat(authorizations).containsOnly("null");
    }

    @Test
    void anUnreachableGatewayIsAFailureNotAnException() {
        StackWarmUp.Result result = new StackWarmUp(null).run(List.of(URI.create("http://127.0.0.1:1")), 2, 1, StackWarmUp.DEFAULT_BUDGET);

        assertThat(result.answered()).isZero();
        assertThat(result.failures()).singleElement().asString().contains("/v1/models");
    }

    @Test
    void warmUpRoundsComeFromTheirOptionAndLeaveTheRestInOrder() {
        StackWarmUp.Parsed parsed = StackWarmUp.parse(new String[] {"--open", "--warm-up=0", "--gateways=2"});
        assertThat(parsed.rounds()).isZero();
        assertThat(parsed.rest()).containsExactly("--open", "--gateways=2");
        assertThat(StackWarmUp.parse(new String[0]).rounds()).isEqualTo(StackWarmUp.DEFAULT_ROUNDS);
        assertThatThrownBy(() -> StackWarmUp.parse(new String[] {"--warm-up=-1"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--warm-up");
    }
}
