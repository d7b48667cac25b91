package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.LONG_PROMPT_BYTES;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Worker faults, on a stack this class owns (it kills one of its workers, so no other class may share
 * it), one stack for every case, in this order:
 * <ol>
 *   <li>garbage to the workers' internal endpoints is a 400 that leaves nothing registered or reserved;</li>
 *   <li>a streaming client that never reads a long stream is cancelled with {@code CLIENT_STALLED}, with the
 *       gateway's per-stream buffer within its bound, and both workers end idle;</li>
 *   <li>the decode worker killed with SIGKILL while a long prompt is mid-prefill (its KV mid-transfer): the client
 *       gets a clear error, prefill frees every page, session and registration of that request, and the gateway's
 *       circuit breaker for that decode instance opens (contract C2's metric).</li>
 * </ol>
 * Facts only: states and counts are polled until they hold; durations are printed, never asserted.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WorkerFaultsIT {

    /** Short so the stall case is quick; the point is what happens, not when. */
    private static final String STALL_TIMEOUT = "2s";
    /** A small kernel send buffer, so that a stream of a few thousand events cannot hide in the kernel. */
    private static final String SEND_BUFFER = "8KB";

    private static LocalStack stack;
    private static Endpoints endpoints;

    @BeforeAll
    static void startStack() {
        Map<String, String> properties = TestStacks.withDefaults(Map.of(
                key(SMALL_MODEL), value(SMALL_MODEL), key(CHUNK_64), value(CHUNK_64), key(BOTH), value(BOTH),
                "ripcord.gateway.openai.stream-stall-timeout", STALL_TIMEOUT,
                "ripcord.gateway.openai.socket-send-buffer", SEND_BUFFER));
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/worker-faults-"
                + ProcessHandle.current().pid());
        stack = LocalStack.start(TestStacks.options(properties, logDir), null);
        endpoints = new Endpoints(URI.create(stack.url(Role.GATEWAY)), URI.create(stack.url(Role.PREFILL)),
                URI.create(stack.url(Role.DECODE)), "ripcord-small");
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    // ------------------------------------------------------------------------------------------------ 1. garbage

    @Test
    @Order(1)
    void garbageToTheInternalEndpointsIs400AndLeavesNothingBehind() {
        WorkerStatus prefillBefore = endpoints.status(Role.PREFILL);
        WorkerStatus decodeBefore = endpoints.status(Role.DECODE);
        String sampling = "\"sampling\":{\"temperature\":0,\"topP\":1,\"seed\":1}";
        List<String> common = List.of("", " ", "{", "}", "null", "[]", "\"x\"", "42", "{\"requestId\":",
                "{\"requestId\":\"a\"} trailing", "{\"unknown\":true}", "{\"requestId\":\"bad id!\"," + sampling + "}",
                "{\"requestId\":[]}", "{\"requestId\":\"" + "x".repeat(200) + "\"}");
        List<String> decode = new ArrayList<>(common);
        decode.addAll(List.of(
                "{\"requestId\":\"g-1\",\"promptTokens\":0,\"maxTokens\":4," + sampling + "}",
                "{\"requestId\":\"g-2\",\"promptTokens\":-5,\"maxTokens\":4," + sampling + "}",
                "{\"requestId\":\"g-3\",\"promptTokens\":10,\"maxTokens\":-1," + sampling + "}",
                "{\"requestId\":\"g-4\",\"promptTokens\":2147483647,\"maxTokens\":2147483647," + sampling + "}",
                "{\"requestId\":\"g-5\",\"promptTokens\":10,\"maxTokens\":4}",
                "{\"requestId\":\"g-6\",\"promptTokens\":\"ten\",\"maxTokens\":4," + sampling + "}",
                "{\"requestId\":\"g-7\",\"promptTokens\":10,\"maxTokens\":4,"
                        + "\"sampling\":{\"temperature\":-1,\"topP\":1,\"seed\":1}}",
                "{\"requestId\":\"g-8\",\"promptTokens\":10,\"maxTokens\":4,"
                        + "\"sampling\":{\"temperature\":0,\"topP\":0,\"seed\":1}}",
                "{\"requestId\":\"g-9\",\"promptTokens\":10,\"maxTokens\":4,"
                        + "\"sampling\":{\"temperature\":1e400,\"topP\":1,\"seed\":1}}"));
        List<String> prefill = new ArrayList<>(common);
        prefill.addAll(List.of(
                "{\"requestId\":\"g-1\",\"tokens\":[]," + sampling + ",\"transfer\":\"x\"}",
                "{\"requestId\":\"g-2\",\"tokens\":[1,2]," + sampling + "}",
                "{\"requestId\":\"g-3\",\"tokens\":[1,2]," + sampling + ",\"transfer\":\"not a descriptor\"}",
                "{\"requestId\":\"g-4\",\"tokens\":[1,2]," + sampling + ",\"transfer\":\"" + "|".repeat(15) + "\"}",
                "{\"requestId\":\"g-5\",\"tokens\":[-1]," + sampling + ",\"transfer\":\"x\"}",
                "{\"requestId\":\"g-6\",\"tokens\":[99999999]," + sampling + ",\"transfer\":\"x\"}",
                "{\"requestId\":\"g-7\",\"tokens\":\"abc\"," + sampling + ",\"transfer\":\"x\"}",
                "{\"requestId\":\"g-8\",\"tokens\":[1],\"transfer\":\"x\"}",
                "{\"requestId\":\"g-9\",\"tokens\":[1],\"sampling\":{\"temperature\":0,\"topP\":2,\"seed\":1},"
                        + "\"transfer\":\"x\"}"));

        List<String> wrong = new ArrayList<>();
        for (String body : decode) {
            int status = postInternal(endpoints.decode(), InternalApi.DECODE, body);
            if (status != 400) {
                wrong.add("decode " + status + " for " + abbreviate(body));
            }
        }
        for (String body : prefill) {
            int status = postInternal(endpoints.prefill(), InternalApi.PREFILL, body);
            if (status != 400) {
                wrong.add("prefill " + status + " for " + abbreviate(body));
            }
        }
        assertThat(wrong).as("internal requests that did not get a 400").isEmpty();

        WorkerStatus prefillAfter = endpoints.status(Role.PREFILL);
        WorkerStatus decodeAfter = endpoints.status(Role.DECODE);
        Endpoints.assertIdle(prefillAfter);
        Endpoints.assertIdle(decodeAfter);
        assertThat(prefillAfter.aborts()).isEqualTo(prefillBefore.aborts());
        assertThat(decodeAfter.aborts()).isEqualTo(decodeBefore.aborts());
        // And they still serve.
        Outcome served = new StreamingClient(endpoints.gateway()).start(StreamingClient.completion(endpoints.model(),
                Texts.ofBytes(40), 4, true), "after-garbage-" + UUID.randomUUID()).outcome().join();
        assertThat(served.completed()).as("%s", served).isTrue();
    }

    // ------------------------------------------------------------------------------------------------ 2. stall

    @Test
    @Order(2)
    void clientThatNeverReadsIsCancelledAsStalledAndBothWorkersEndIdle() throws Exception {
        endpoints.awaitWorkersIdle();
        Prometheus before = Prometheus.scrape(endpoints.gateway());
        String id = "stalled-" + UUID.randomUUID();
        long decodeMark = Journal.mark(endpoints.decode());
        byte[] body = StreamingClient.JSON.writeValueAsBytes(StreamingClient.completion(endpoints.model(),
                Texts.ofBytes(60), 4000, true));
        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(1024); // before connect, so the window is small from the start
            socket.connect(new InetSocketAddress(endpoints.gateway().getHost(), endpoints.gateway().getPort()), 10_000);
            StringBuilder head = new StringBuilder("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
                    + "Content-Type: application/json\r\nX-Request-Id: " + id + "\r\nContent-Length: " + body.length
                    + "\r\n");
            String apiKey = TestCredentials.apiKey(endpoints.gateway());
            if (apiKey != null) {
                head.append("Authorization: Bearer ").append(apiKey).append("\r\n");
            }
            OutputStream out = socket.getOutputStream();
            out.write(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            long sent = System.nanoTime();

            // Not one byte read: the gateway must give up on this client on its own.
            Awaitility.await("the gateway cancels the stalled stream").atMost(Duration.ofMinutes(3))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> stalledStreams(Prometheus.scrape(endpoints.gateway())) > stalledStreams(before));
            System.out.printf("stalled client: the gateway gave up %d ms after the request%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent));
            endpoints.awaitWorkersIdle();
        }

        Prometheus after = Prometheus.scrape(endpoints.gateway());
        assertThat(stalledStreams(after) - stalledStreams(before)).isEqualTo(1);
        assertThat(after.sum("ripcord_cancellations_total", "service", "gateway", "path", "client_stalled")
                - before.sum("ripcord_cancellations_total", "service", "gateway", "path", "client_stalled"))
                .as("gateway cancels with reason CLIENT_STALLED").isEqualTo(1);
        double capacity = after.sum("ripcord_gateway_stream_buffer_capacity");
        assertThat(capacity).isPositive();
        assertThat(after.sum("ripcord_gateway_stream_buffered_peak")).as("the most events one stream held")
                .isPositive().isLessThanOrEqualTo(capacity);
        assertThat(after.sum("ripcord_gateway_stream_buffered")).as("events held now").isZero();
        assertThat(after.sum("ripcord_gateway_stream_open")).as("streams being written now").isZero();
        // Decode stopped the generation early (the in-band path carries no reason: its journal says how the cancel
        // came, and CLIENT_STALLED travels in the Kafka event), and freed its pages.
        Journal decode = Journal.since(endpoints.decode(), decodeMark);
        System.out.printf("stalled client: decode journal %s%n", decode.of(id));
        assertThat(decode.count(id, "CANCEL_OBSERVED")).as("decode journal of %s", id).isEqualTo(1);
        assertThat(decode.count(id, "STOPPED")).isEqualTo(1);
        assertThat(decode.has(id, "FINISHED")).isFalse();
        assertThat(decode.count(id, "FREED")).isEqualTo(1);
    }

    // ------------------------------------------------------------------------------------------------ 3. kill

    @Test
    @Order(3)
    void decodeKilledMidPrefillGivesTheClientAClearErrorPrefillFreesEverythingAndTheBreakerOpens()
            throws Exception {
        endpoints.awaitWorkersIdle();
        String id = "decode-killed-" + UUID.randomUUID();
        long prefillMark = Journal.mark(endpoints.prefill());
        StreamingClient client = new StreamingClient(endpoints.gateway());
        Call call = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(LONG_PROMPT_BYTES), 8,
                true), id);
        DisconnectScenario.awaitChunk(endpoints, prefillMark, id, 1, call);

        stack.kill(Role.DECODE);
        long killed = System.nanoTime();

        Outcome outcome = call.outcome().get(2, TimeUnit.MINUTES);
        System.out.printf("decode killed: the client got %s%n", outcome);
        assertThat(outcome.completed()).isFalse();
        assertThat(outcome.disconnected()).isFalse();
        assertThat(outcome.error()).as("a clear error, as a status with a body or as an SSE error event").isNotBlank();
        if (outcome.status() == 200) {
            assertThat(outcome.sawDone()).as("the error event is followed by [DONE]").isTrue();
        } else {
            assertThat(outcome.status()).as("an error status before the first byte").isBetween(500, 599);
            assertThat(outcome.error()).contains("\"error\"");
        }

        // Prefill frees every page, session and registration of the request, without decode ever answering.
        Awaitility.await("prefill holds nothing after decode died").atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> Endpoints.assertIdle(endpoints.status(Role.PREFILL)));
        System.out.printf("decode killed: prefill idle %d ms after the kill (transfer lease 5 s)%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
        Journal prefill = Journal.since(endpoints.prefill(), prefillMark);
        assertThat(prefill.has(id, "DONE")).as("prefill did not complete a request whose decode died").isFalse();
        assertThat(prefill.has(id, "FREED")).as("prefill journal of %s: %s", id, prefill.events(id)).isTrue();

        // The gateway's breaker for that decode instance opens; requests meanwhile fail fast and clearly.
        String breaker = "decode:localhost:" + endpoints.decode().getPort();
        List<Integer> statuses = new ArrayList<>();
        for (int i = 0; i < 40 && !breakerOpen(breaker); i++) {
            Outcome failed = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(40), 4, true),
                    "after-kill-" + i + "-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
            statuses.add(failed.status());
            assertThat(failed.completed()).isFalse();
            assertThat(failed.error()).as("request %d after the kill: %s", i, failed).isNotBlank();
        }
        System.out.printf("decode killed: statuses of the requests until the breaker opened: %s%n", statuses);
        assertThat(breakerOpen(breaker)).as("resilience4j_circuitbreaker_state{name=\"%s\",state=\"open\"}", breaker)
                .isTrue();
        Outcome refused = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(40), 4, true),
                "breaker-open-" + UUID.randomUUID()).outcome().get(1, TimeUnit.MINUTES);
        assertThat(refused.status()).as("%s", refused).isEqualTo(503);
        assertThat(refused.error()).contains("service_unavailable");
        Endpoints.assertIdle(endpoints.status(Role.PREFILL));
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static double stalledStreams(Prometheus gateway) {
        return gateway.sum("ripcord_gateway_stream_stalled_total");
    }

    private static boolean breakerOpen(String name) {
        return Prometheus.scrape(endpoints.gateway()).sum("resilience4j_circuitbreaker_state", "name", name,
                "state", "open") == 1;
    }

    /** POSTs raw bytes to a worker's internal endpoint with the stack's internal token; returns the status. */
    private static int postInternal(URI worker, String path, String body) {
        HttpRequest request = TestCredentials.withInternalToken(HttpRequest.newBuilder(worker.resolve(path)),
                        TestCredentials.internalToken(worker))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .header("Accept", InternalApi.NDJSON)
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
        try (HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            throw new AssertionError("POST " + path + " " + abbreviate(body) + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String abbreviate(String body) {
        return body.length() > 100 ? body.substring(0, 100) + "..." : body;
    }

    private static String key(String property) {
        return property.substring(0, property.indexOf('='));
    }

    private static String value(String property) {
        return property.substring(property.indexOf('=') + 1);
    }
}
