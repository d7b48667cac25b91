package dev.ripcord.stack.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The serve bench against in-process fake OpenAI servers (the JDK's {@code com.sun.net.httpserver}) whose every
 * answer is decided by the request ID: the plan's leavers are held open until their client goes, some others are
 * refused with 503, the rest stream {@code max_tokens} tokens. So every count is a fact, never a race.
 */
class ServeBenchTest {

    private static final Pattern PHASE_ID = Pattern.compile("-r(\\d+)-c(\\d+)-(\\d+)$");
    private static final int MAX_TOKENS = 5;

    private final List<HttpServer> servers = new ArrayList<>();
    private final ExecutorService handlers = Executors.newVirtualThreadPerTaskExecutor();

    @AfterEach
    void stopServers() {
        servers.forEach(s -> s.stop(0));
        handlers.shutdownNow();
    }

    /**
     * A fake server. With {@code usage}, it takes {@code stream_options.include_usage}, sends the usage chunk, and one
     * token of each answer carries no text (so counting text events would come out one short); without, it refuses
     * {@code stream_options} with 400, as a strict server would, and every token carries text.
     */
    private final class FakeServer {
        final HttpServer http;
        final boolean usage;
        volatile ServeOptions options;

        FakeServer(boolean usage) throws IOException {
            this.usage = usage;
            http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            http.setExecutor(handlers);
            http.createContext("/v1/models", exchange -> answer(exchange, 200, "application/json",
                    "{\"object\":\"list\",\"data\":[{\"id\":\"fake-model\",\"object\":\"model\"}]}"));
            http.createContext("/v1/completions", this::completion);
            http.start();
            servers.add(http);
        }

        String url() {
            return "http://127.0.0.1:" + http.getAddress().getPort();
        }

        private void completion(HttpExchange exchange) throws IOException {
            JsonNode body = ServeBench.JSON.readTree(exchange.getRequestBody().readAllBytes());
            boolean wantsUsage = body.path("stream_options").path("include_usage").asBoolean(false);
            if (!usage && body.has("stream_options")) {
                answer(exchange, 400, "application/json",
                        "{\"error\":{\"message\":\"unknown field stream_options\","
                                + "\"type\":\"invalid_request_error\"}}");
                return;
            }
            if (!body.path("model").asString("").equals("fake-model") || body.path("temperature").asInt(-1) != 0) {
                answer(exchange, 422, "application/json", "{\"error\":{\"message\":\"unexpected body\"}}");
                return;
            }
            int maxTokens = body.path("max_tokens").asInt();
            Matcher id = PHASE_ID.matcher(String.valueOf(exchange.getRequestHeaders().getFirst("X-Request-Id")));
            boolean leaver = false;
            if (id.find()) {
                int round = Integer.parseInt(id.group(1));
                int concurrency = Integer.parseInt(id.group(2));
                int i = Integer.parseInt(id.group(3));
                leaver = LevelPlan.of(options, round, concurrency).leaves(i);
                if (!leaver && refused(i)) {
                    answer(exchange, 503, "application/json", "{\"error\":{\"message\":\"busy\"}}");
                    return;
                }
            }
            exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
            exchange.sendResponseHeaders(200, 0);
            try (OutputStream out = exchange.getResponseBody()) {
                if (leaver) {
                    event(out, chunk(" Once", null));
                    holdUntilTheClientLeaves(out);
                    return;
                }
                for (int t = 0; t < maxTokens; t++) {
                    event(out, chunk(usage && t == 1 ? "" : " tok" + t, null));
                }
                event(out, chunk("", "length"));
                if (wantsUsage) {
                    event(out, "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" + maxTokens
                            + ",\"total_tokens\":" + (maxTokens + 3) + "}}");
                }
                event(out, "[DONE]");
            }
        }

        private void holdUntilTheClientLeaves(OutputStream out) {
            long giveUp = System.nanoTime() + 60_000_000_000L;
            try {
                while (System.nanoTime() < giveUp) {
                    out.write(": waiting\n\n".getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    Thread.sleep(10);
                }
            } catch (IOException gone) {
                // the client left: what this handler waits for
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The requests the fake servers refuse with 503 (unless the plan makes them leave). */
    private static boolean refused(int i) {
        return i % 5 == 4;
    }

    private static String chunk(String text, String finishReason) {
        return "{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":"
                + (finishReason == null ? "null" : "\"" + finishReason + "\"") + "}]}";
    }

    private static void event(OutputStream out, String data) throws IOException {
        out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static void answer(HttpExchange exchange, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Test
    void countsCompletedLeftAndFailedRequestsAndTheirTokensPerTargetAndLevel() throws Exception {
        FakeServer withUsage = new FakeServer(true);
        FakeServer strict = new FakeServer(false);
        ServeOptions options = ServeOptions.parse(new String[] {"--target=usage=" + withUsage.url(),
                "--target=strict=" + strict.url(), "--concurrency=1,3", "--requests=12", "--rounds=2",
                "--max-tokens=" + MAX_TOKENS, "--leave=0.25@5ms", "--pause=0ms", "--warm-up=2", "--timeout=120s"},
                Map.of());
        withUsage.options = options;
        strict.options = options;
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        ServeBench bench = new ServeBench(options, new PrintStream(progress, true, StandardCharsets.UTF_8));

        List<ServeBench.Endpoint> endpoints = bench.prepare();
        List<LevelFigures> figures = bench.run(endpoints);

        assertThat(endpoints).extracting(ServeBench.Endpoint::name, ServeBench.Endpoint::model,
                        ServeBench.Endpoint::usage)
                .containsExactly(tuple("usage", "fake-model", true), tuple("strict", "fake-model", false));
        assertThat(figures).extracting(LevelFigures::target, LevelFigures::concurrency)
                .containsExactly(tuple("usage", 1), tuple("strict", 1), tuple("usage", 3), tuple("strict", 3));
        assertThat(progress.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("round ")))
                .as("a line per round, level and target").hasSize(8);
        for (LevelFigures f : figures) {
            int left = 0;
            int refused = 0;
            for (int round = 1; round <= 2; round++) {
                LevelPlan plan = LevelPlan.of(options, round, f.concurrency());
                for (int i = 0; i < plan.requests(); i++) {
                    if (plan.leaves(i)) {
                        left++;
                    } else if (refused(i)) {
                        refused++;
                    }
                }
            }
            int completed = 24 - left - refused;
            assertThat(left).as("3 of 12 leave in each round").isEqualTo(6);
            assertThat(f.rounds()).isEqualTo(2);
            assertThat(f.requests()).as(f.target()).isEqualTo(24);
            assertThat(f.left()).as(f.target()).isEqualTo(left);
            assertThat(f.failed()).as(f.target()).isEqualTo(refused);
            assertThat(f.failures()).as(f.target()).isEqualTo(refused == 0 ? Map.of() : Map.of("HTTP 503", refused));
            assertThat(f.completed()).as(f.target()).isEqualTo(completed);
            // the usage chunk's count wins over the text events, one short on that server
            assertThat(f.tokens()).as(f.target()).isEqualTo((long) completed * MAX_TOKENS);
        }
    }

    @Test
    void printsOneJsonObjectPerTargetAndLevelAndARatioRowPerLevel() throws Exception {
        FakeServer a = new FakeServer(true);
        FakeServer b = new FakeServer(true);
        ServeOptions options = ServeOptions.parse(new String[] {"--target=a=" + a.url(), "--target=b=" + b.url(),
                "--concurrency=1,2", "--requests=4", "--max-tokens=" + MAX_TOKENS, "--pause=0ms", "--warm-up=1"},
                Map.of());
        a.options = options;
        b.options = options;
        ServeBench bench = new ServeBench(options, new PrintStream(OutputStream.nullOutputStream()));
        List<ServeBench.Endpoint> endpoints = bench.prepare();
        List<LevelFigures> figures = bench.run(endpoints);
        ServeReport report = new ServeReport(options, endpoints, new ServeReport.Machine("Test CPU", 2,
                ZonedDateTime.parse("2026-12-03T10:00:00Z"), "0.5"));

        ByteArrayOutputStream json = new ByteArrayOutputStream();
        report.json(new PrintStream(json, true, StandardCharsets.UTF_8), figures);
        ByteArrayOutputStream tables = new ByteArrayOutputStream();
        report.tables(new PrintStream(tables, true, StandardCharsets.UTF_8), figures);

        List<String> lines = json.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).hasSize(4);
        List<String> seen = new ArrayList<>();
        for (String line : lines) {
            JsonNode o = ServeBench.JSON.readTree(line);
            seen.add(o.path("target").asString() + "@" + o.path("concurrency").asInt());
            assertThat(o.path("requests").asInt()).isEqualTo(4);
            assertThat(o.path("completed").asInt()).isEqualTo(4);
            assertThat(o.path("output_tokens").asLong()).isEqualTo(4L * MAX_TOKENS);
            assertThat(o.path("cpu").asString()).isEqualTo("Test CPU");
            assertThat(o.path("tokens_from").asString()).isEqualTo("usage");
        }
        assertThat(seen).containsExactly("a@1", "b@1", "a@2", "b@2");
        String text = tables.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("| concurrency (requests) | a: tok/s, TTFT p50, ITL p99, failures "
                + "| b: tok/s, TTFT p50, ITL p99, failures | b / a: tok/s, TTFT p50, ITL p99 |");
        assertThat(text.lines().filter(l -> l.startsWith("| 1 (4) |") || l.startsWith("| 2 (4) |"))).hasSize(2);
        assertThat(text).contains("failures by kind: none");
    }

    @Test
    void aTargetThatRefusesConnectionsFailsItsWarmUpNamingIt() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = socket.getLocalPort();
        }
        ServeOptions options = ServeOptions.parse(new String[] {"--target=gone=http://127.0.0.1:" + closedPort,
                "--model=m"}, Map.of());

        assertThatThrownBy(() -> new ServeBench(options, new PrintStream(OutputStream.nullOutputStream())).prepare())
                .isInstanceOf(ServeBench.WarmUpException.class)
                .hasMessageContaining("target gone at http://127.0.0.1:" + closedPort)
                .hasMessageContaining("ConnectException");
    }
}
