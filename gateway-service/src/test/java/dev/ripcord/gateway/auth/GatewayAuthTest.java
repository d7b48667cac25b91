package dev.ripcord.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.protocol.testing.AmbiguousPaths;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The whole gateway behind a real Netty server, with two API keys and a bound of two completions in flight per key:
 * who gets in (401 bodies), who owns what (cancel by owner only), and that every concurrency permit taken is given
 * back exactly once, however the response ends.
 */
@SpringBootTest(classes = GatewayUnderTest.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.cancel.propagation=in-band",
                // No Kafka here; and no functional bean may be bound to it by accident (NettyServerCustomizer is one).
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.gateway.auth.enabled=true",
                "ripcord.gateway.auth.max-concurrent-streams=2",
                "ripcord.gateway.auth.forward-unknown-cancels=false"})
class GatewayAuthTest {

    static final String KEY_A = "rk-test-key-a-0123456789";
    static final String KEY_B = "rk-test-key-b-0123456789";

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        registry.add("ripcord.gateway.auth.api-key-hashes", () -> ApiKeys.hash(KEY_A) + "," + ApiKeys.hash(KEY_B));
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;
    @Autowired
    ScriptedGenerator generator;
    @Autowired
    RequestContexts contexts;
    @Autowired
    ApiKeyFilter filter;

    private WebTestClient http;
    private WebClient streaming;

    @BeforeEach
    void clients() {
        http = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(Duration.ofSeconds(20))
                .build();
        streaming = WebClient.create("http://127.0.0.1:" + port);
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.liveRequests() == 0);
    }

    static String identity(String key) {
        return ApiKeys.identityOfHash(ApiKeys.hash(key));
    }

    private static String completion(boolean stream) {
        return "{\"model\":\"ripcord-small\",\"prompt\":\"hi\",\"max_tokens\":1,\"stream\":" + stream + "}";
    }

    private WebTestClient.ResponseSpec post(String path, String key, String requestId, String body) {
        return http.post().uri(path).contentType(MediaType.APPLICATION_JSON)
                .headers(h -> {
                    if (key != null) {
                        h.setBearerAuth(key);
                    }
                    if (requestId != null) {
                        h.set("X-Request-Id", requestId);
                    }
                })
                .bodyValue(body).exchange();
    }

    /** Starts a streamed completion that stays in flight until finished, cancelled or disposed. */
    private Disposable startStream(String key, String requestId) {
        return streaming.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .headers(h -> {
                    h.setBearerAuth(key);
                    h.set("X-Request-Id", requestId);
                })
                .bodyValue(completion(true)).retrieve().bodyToFlux(String.class)
                .onErrorResume(e -> Flux.empty()).subscribe();
    }

    private static JsonNode json(byte[] body) {
        return JsonMapper.builder().build().readTree(body);
    }

    // --- who gets in ------------------------------------------------------------------------------------------

    @Test
    void aCompletionWithoutAKeyIs401WithAnOpenAiBodyAndWwwAuthenticate() {
        int generations = generator.owners.size();
        byte[] body = post("/v1/completions", null, null, completion(false))
                .expectStatus().isUnauthorized()
                .expectHeader().valueMatches(HttpHeaders.WWW_AUTHENTICATE, "Bearer.*")
                .expectHeader().exists("X-Request-Id")
                .expectBody().returnResult().getResponseBody();
        JsonNode error = json(body).get("error");
        assertThat(error.get("type").stringValue()).isEqualTo("invalid_request_error");
        assertThat(error.get("code").stringValue()).isEqualTo("invalid_api_key");
        assertThat(error.get("message").stringValue()).contains("Authorization: Bearer");
        assertThat(generator.owners).as("nothing was generated").hasSize(generations);
    }

    @Test
    void aWrongKeyIs401AndTheAnswerNeverEchoesIt() {
        int generations = generator.owners.size();
        for (String wrong : new String[] {KEY_A + "x", KEY_A.substring(1), "", "Basic " + KEY_A}) {
            WebTestClient.ResponseSpec response = wrong.startsWith("Basic ")
                    ? http.post().uri("/v1/completions").header(HttpHeaders.AUTHORIZATION, wrong)
                            .contentType(MediaType.APPLICATION_JSON).bodyValue(completion(false)).exchange()
                    : post("/v1/completions", wrong, null, completion(false));
            byte[] body = response.expectStatus().isUnauthorized()
                    .expectHeader().exists(HttpHeaders.WWW_AUTHENTICATE)
                    .expectBody().jsonPath("$.error.code").isEqualTo("invalid_api_key")
                    .returnResult().getResponseBody();
            if (!wrong.isEmpty()) {
                assertThat(new String(body)).doesNotContain(wrong.replace("Basic ", ""));
            }
        }
        assertThat(generator.owners).as("nothing was generated").hasSize(generations);
    }

    @Test
    void theRightKeyIsServedAndTheRequestIsOwnedByItsIdentity() {
        String id = "auth-ok-" + UUID.randomUUID();
        generator.finish(id);
        post("/v1/completions", KEY_B, id, completion(false)).expectStatus().isOk()
                .expectBody().jsonPath("$.choices[0].finish_reason").isEqualTo("length");
        assertThat(generator.owners).last().isEqualTo(identity(KEY_B));
        assertThat(identity(KEY_B)).matches("key-[0-9a-f]{12}");
        // The scheme is case-insensitive (RFC 7235).
        String id2 = "auth-ok-" + UUID.randomUUID();
        generator.finish(id2);
        http.post().uri("/v1/completions").header(HttpHeaders.AUTHORIZATION, "bearer " + KEY_A)
                .header("X-Request-Id", id2).contentType(MediaType.APPLICATION_JSON).bodyValue(completion(false))
                .exchange().expectStatus().isOk();
        assertThat(generator.owners).last().isEqualTo(identity(KEY_A));
    }

    @Test
    void modelsAndCancelNeedAKey() {
        http.get().uri("/v1/models").exchange().expectStatus().isUnauthorized();
        http.get().uri("/v1/models").headers(h -> h.setBearerAuth(KEY_A)).exchange().expectStatus().isOk();
        post("/v1/requests/some-id/cancel", null, null, "").expectStatus().isUnauthorized();
    }

    /**
     * Regression: {@code /actuator/prometheus} was served on the API port, to anyone, with every caller's key
     * identity in its labels. Actuator now lives only on the management port; on the API port every spelling of it
     * is unknown, with or without a key.
     */
    @Test
    void actuatorIsServedOnlyOnTheManagementPortNeverOnTheApiPort() {
        assertThat(managementPort).as("a management port of its own").isPositive().isNotEqualTo(port);
        for (String path : new String[] {"/actuator/prometheus", "/actuator/health", "/actuator/health/liveness",
                "/actuator/metrics", "/actuator", "/actuator;x/prometheus", "/%61ctuator/prometheus",
                "//actuator/prometheus"}) {
            http.get().uri(java.net.URI.create("http://127.0.0.1:" + port + path)).exchange()
                    .expectStatus().value(status -> assertThat(status).as("API port %s", path).isIn(400, 401, 404));
            http.get().uri(java.net.URI.create("http://127.0.0.1:" + port + path))
                    .headers(h -> h.setBearerAuth(KEY_A)).exchange()
                    .expectStatus().value(status -> assertThat(status).as("API port %s with a key", path)
                            .isIn(400, 404));
        }
        WebTestClient management = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort)
                .responseTimeout(Duration.ofSeconds(20)).build();
        management.get().uri("/actuator/health/liveness").exchange().expectStatus().isOk();
        management.get().uri("/actuator/health/readiness").exchange().expectStatus().isOk();
        management.get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
                .expectBody(String.class).value(body -> assertThat(body).contains("jvm_memory_used_bytes"));
    }

    /**
     * Regression: the filter compared the raw path with {@code /v1/} while the router matches the decoded path with
     * {@code ;params} stripped, so {@code /v1;x/completions} and {@code /%76%31/completions} were served without a
     * key. Every such spelling of every gated route, sent over a real socket without a key, is refused (400 or 401)
     * and generates nothing.
     */
    @Test
    void everyAmbiguousSpellingOfAGatedRouteIsRefusedNeverServed() {
        int generations = generator.owners.size();
        Map<String, HttpMethod> routes = new LinkedHashMap<>();
        routes.put("/v1/completions", HttpMethod.POST);
        routes.put("/v1/chat/completions", HttpMethod.POST);
        routes.put("/v1/models", HttpMethod.GET);
        routes.put("/v1/models/ripcord-small", HttpMethod.GET);
        routes.put("/v1/requests", HttpMethod.GET);
        routes.put("/v1/requests/req-1", HttpMethod.GET);
        routes.put("/v1/requests/req-1/cancel", HttpMethod.POST);
        routes.put("/tokenize", HttpMethod.POST);
        routes.put("/detokenize", HttpMethod.POST);
        int sent = 0;
        for (Map.Entry<String, HttpMethod> route : routes.entrySet()) {
            for (String spelling : AmbiguousPaths.of(route.getKey())) {
                int status = http.method(route.getValue()).uri(URI.create("http://127.0.0.1:" + port + spelling))
                        .contentType(MediaType.APPLICATION_JSON).bodyValue(completion(false)).exchange()
                        .returnResult(String.class).getStatus().value();
                assertThat(status).as("%s %s", route.getValue(), spelling).isIn(400, 401);
                sent++;
            }
        }
        assertThat(sent).isGreaterThan(100);
        assertThat(generator.owners).as("nothing was generated").hasSize(generations);
        byte[] body = http.post().uri(URI.create("http://127.0.0.1:" + port + "/v1;x/completions"))
                .contentType(MediaType.APPLICATION_JSON).bodyValue(completion(false)).exchange()
                .expectStatus().isBadRequest().expectBody().returnResult().getResponseBody();
        assertThat(json(body).get("error").get("code").stringValue()).isEqualTo("invalid_path");
    }

    @Test
    void ambiguousPathsAreRefusedWithAValidKeyToo() {
        http.post().uri(URI.create("http://127.0.0.1:" + port + "/%76%31/completions"))
                .contentType(MediaType.APPLICATION_JSON).headers(h -> h.setBearerAuth(KEY_A))
                .bodyValue(completion(false)).exchange().expectStatus().isBadRequest();
        http.get().uri(URI.create("http://127.0.0.1:" + port + "/actuator;x/health")).exchange()
                .expectStatus().isBadRequest();
    }

    // --- who owns what ----------------------------------------------------------------------------------------

    @Test
    void onlyTheKeyThatStartedARequestCanCancelItAndOthersCannotTellItExists() {
        String id = "owned-" + UUID.randomUUID();
        Disposable stream = startStream(KEY_A, id);
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));

            byte[] foreign = post("/v1/requests/" + id + "/cancel", KEY_B, null, "").expectStatus().isNotFound()
                    .expectBody().returnResult().getResponseBody();
            byte[] unknown = post("/v1/requests/" + id + "-unknown/cancel", KEY_B, null, "")
                    .expectStatus().isNotFound().expectBody().returnResult().getResponseBody();
            assertThat(json(foreign).get("error").get("code").stringValue())
                    .isEqualTo(json(unknown).get("error").get("code").stringValue()).isEqualTo("request_not_found");
            assertThat(contexts.isLive(id)).as("another key's cancel changed nothing").isTrue();

            post("/v1/requests/" + id + "/cancel", KEY_A, null, "").expectStatus().isOk()
                    .expectBody().jsonPath("$.status").isEqualTo("cancelled");
            await().atMost(Duration.ofSeconds(10)).until(() -> !contexts.isLive(id));
        } finally {
            stream.dispose();
        }
    }

    // --- how much -------------------------------------------------------------------------------------------

    @Test
    void eachKeyHasAtMostTwoCompletionsInFlightAndEveryPermitIsReleasedExactlyOnce() {
        StreamPermits permits = filter.permits();
        String a = identity(KEY_A);
        long acquiredBefore = permits.acquired();
        long releasedBefore = permits.released();
        String finished = "bound-finished-" + UUID.randomUUID();
        String disconnected = "bound-disconnected-" + UUID.randomUUID();
        Disposable first = startStream(KEY_A, finished);
        Disposable second = startStream(KEY_A, disconnected);
        try {
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> contexts.isLive(finished) && contexts.isLive(disconnected));
            assertThat(permits.active(a)).isEqualTo(2);

            // A third is refused, and takes nothing; another key is not affected.
            post("/v1/completions", KEY_A, null, completion(false))
                    .expectStatus().isEqualTo(429)
                    .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "1")
                    .expectBody().jsonPath("$.error.code").isEqualTo("concurrency_limit_exceeded")
                    .jsonPath("$.error.type").isEqualTo("rate_limit_error");
            assertThat(permits.active(a)).isEqualTo(2);
            String other = "bound-other-key-" + UUID.randomUUID();
            generator.finish(other);
            post("/v1/completions", KEY_B, other, completion(false)).expectStatus().isOk();

            // One ends normally, one by the client going away: both places come back, once each.
            generator.finish(finished);
            second.dispose();
            await().atMost(Duration.ofSeconds(10)).until(() -> permits.active(a) == 0);
            await().atMost(Duration.ofSeconds(10)).until(() -> contexts.liveRequests() == 0);

            // A request refused by validation after admission releases its place too.
            post("/v1/completions", KEY_A, null, "{\"model\":\"ripcord-small\"}").expectStatus().isBadRequest();
            // And one rejected before admission (no key) never took one.
            post("/v1/completions", null, null, completion(false)).expectStatus().isUnauthorized();

            // The permit goes back when the exchange ends on the server (doFinally), which can be just after the
            // client has read the whole 400: wait for that, then count.
            await().atMost(Duration.ofSeconds(10)).until(() -> permits.active(a) == 0);
            long acquired = permits.acquired() - acquiredBefore;
            assertThat(acquired).as("2 streams, key B's one, the invalid one").isEqualTo(4);
            assertThat(permits.released() - releasedBefore).as("each released exactly once").isEqualTo(acquired);
        } finally {
            first.dispose();
            second.dispose();
        }
    }

    @Test
    void manyClientsGoingAwayAtRandomMomentsLeaveNoPermitTakenAndNoneReleasedTwice() {
        StreamPermits permits = filter.permits();
        String a = identity(KEY_A);
        long acquiredBefore = permits.acquired();
        long releasedBefore = permits.released();
        int rounds = 40;
        for (int i = 0; i < rounds; i++) {
            String id = "churn-" + i + "-" + UUID.randomUUID();
            Disposable stream = startStream(KEY_A, id);
            switch (i % 3) {
                case 0 -> stream.dispose(); // gone at once: maybe before the gateway even read the request
                case 1 -> {
                    await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));
                    stream.dispose(); // gone mid-stream
                }
                default -> {
                    await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));
                    generator.finish(id); // finished normally
                }
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> permits.active(a) == 0);
        }
        // A request abandoned before it was sent may still reach the server: wait for the state, then count.
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.liveRequests() == 0 && permits.active(a) == 0
                && permits.acquired() - acquiredBefore == permits.released() - releasedBefore);
        long acquired = permits.acquired() - acquiredBefore;
        assertThat(acquired).isLessThanOrEqualTo(rounds).isGreaterThanOrEqualTo(rounds * 2 / 3);
        assertThat(permits.released() - releasedBefore).isEqualTo(acquired);
        assertThat(permits.active(a)).isZero();
    }
}
