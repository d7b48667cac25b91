package dev.ripcord.gateway.requests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.auth.GatewayUnderTest;
import dev.ripcord.gateway.auth.ScriptedGenerator;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.client.WebClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The whole gateway behind a real Netty server, the serving core scripted: an explicit cancel answers the original
 * caller with what was produced ({@code finish_reason: "abort"}, the partial text, the usage), streamed and not, on
 * both endpoints; the request API ({@code GET /v1/requests[/{id}]}) shows a caller its own requests only; vLLM's
 * root endpoints ({@code /health}, {@code /version}, {@code /tokenize}, {@code /detokenize}) answer in vLLM's shapes
 * under the same key rules.
 */
@SpringBootTest(classes = GatewayUnderTest.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.cancel.propagation=in-band",
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.gateway.auth.enabled=true"})
class RequestApiTest {

    static final String KEY_A = "rk-test-key-a-0123456789";
    static final String KEY_B = "rk-test-key-b-0123456789";
    static final String MODEL = "ripcord-small";
    static final JsonMapper JSON = JsonMapper.builder().build();

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        registry.add("ripcord.gateway.auth.api-key-hashes", () -> ApiKeys.hash(KEY_A) + "," + ApiKeys.hash(KEY_B));
    }

    @LocalServerPort
    int port;
    @Autowired
    ScriptedGenerator generator;
    @Autowired
    RequestContexts contexts;

    private WebTestClient http;
    private WebClient streaming;
    /** Every answer this test started: one a failed test left open is cancelled, so it cannot fail the next test. */
    private final List<CompletableFuture<List<String>>> answers = new ArrayList<>();

    @BeforeEach
    void clients() {
        http = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(Duration.ofSeconds(20))
                .build();
        streaming = WebClient.create("http://127.0.0.1:" + port);
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.liveRequests() == 0);
    }

    @AfterEach
    void closeAnswers() {
        answers.forEach(answer -> answer.cancel(true)); // a no-op for those that completed
    }

    // --- an explicit cancel answers with what was produced ------------------------------------------------------

    @Test
    void explicitCancelOfAStreamedCompletionEndsWithAbortThePartialTextAndTheUsageChunk() throws Exception {
        String id = id("stream");
        int[] hi = tokensOf("hi");
        CompletableFuture<List<String>> events = stream(KEY_A, id, "/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"abc\",\"max_tokens\":50,\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":true}}");
        relay(id, hi);

        cancel(KEY_A, id);

        List<String> data = events.get(20, TimeUnit.SECONDS);
        assertThat(data.getLast()).isEqualTo("[DONE]");
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        StringBuilder text = new StringBuilder();
        chunks.forEach(c -> c.path("choices").forEach(choice -> text.append(choice.path("text").asString(""))));
        assertThat(text.toString()).as("the text generated before the cancel").isEqualTo("hi");
        JsonNode last = chunks.get(chunks.size() - 2);
        assertThat(last.at("/choices/0/finish_reason").stringValue()).isEqualTo("abort");
        JsonNode usage = chunks.getLast();
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.at("/usage/prompt_tokens").intValue()).isEqualTo(promptTokens("abc"));
        assertThat(usage.at("/usage/completion_tokens").intValue()).isEqualTo(hi.length);
        assertThat(usage.at("/usage/total_tokens").intValue()).isEqualTo(promptTokens("abc") + hi.length);
        assertThat(data).noneMatch(d -> d.contains("\"error\""));
    }

    @Test
    void explicitCancelOfANonStreamedChatCompletionIs200WithThePartialMessageAndUsage() throws Exception {
        String id = id("chat");
        int[] hi = tokensOf("hi");
        CompletableFuture<List<String>> answer = stream(KEY_A, id, "/v1/chat/completions",
                "{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"abc\"}],\"max_tokens\":50}");
        relay(id, hi);

        cancel(KEY_A, id);

        JsonNode body = JSON.readTree(String.join("", answer.get(20, TimeUnit.SECONDS)));
        assertThat(body.get("object").stringValue()).isEqualTo("chat.completion");
        assertThat(body.at("/choices/0/message/content").stringValue()).isEqualTo("hi");
        assertThat(body.at("/choices/0/finish_reason").stringValue()).isEqualTo("abort");
        assertThat(body.at("/usage/completion_tokens").intValue()).isEqualTo(hi.length);
        assertThat(body.at("/usage/prompt_tokens").intValue()).isPositive();
    }

    @Test
    void explicitCancelBeforeAnyTokenIs200WithAnEmptyAbortedAnswer() throws Exception {
        String id = id("empty");
        CompletableFuture<List<String>> answer = stream(KEY_A, id, "/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"abc\",\"max_tokens\":50}");
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));

        cancel(KEY_A, id);

        JsonNode body = JSON.readTree(String.join("", answer.get(20, TimeUnit.SECONDS)));
        assertThat(body.at("/choices/0/text").stringValue()).isEmpty();
        assertThat(body.at("/choices/0/finish_reason").stringValue()).isEqualTo("abort");
        assertThat(body.at("/usage/completion_tokens").intValue()).isZero();
    }

    // --- the request API ------------------------------------------------------------------------------------

    @Test
    void theOwnerSeesItsRequestsStatePhaseAndTokensAndOthersGetTheSame404AsForAnUnknownId() throws Exception {
        String id = id("api");
        int[] hi = tokensOf("hi");
        CompletableFuture<List<String>> events = stream(KEY_A, id, "/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"abc\",\"max_tokens\":50,\"stream\":true}");
        relay(id, hi);

        JsonNode mine = get("/v1/requests/" + id, KEY_A).expectStatus().isOk().expectBody(JsonNode.class)
                .returnResult().getResponseBody();
        assertThat(mine.get("id").stringValue()).isEqualTo(id);
        assertThat(mine.get("object").stringValue()).isEqualTo("request");
        assertThat(mine.get("model").stringValue()).isEqualTo(MODEL);
        assertThat(mine.get("state").stringValue()).isEqualTo("active");
        assertThat(mine.get("phase").stringValue()).isEqualTo("decode");
        assertThat(mine.get("prompt_tokens").intValue()).isEqualTo(promptTokens("abc"));
        assertThat(mine.get("completion_tokens").intValue()).isEqualTo(hi.length);
        assertThat(mine.get("finish_reason").isNull()).isTrue();
        assertThat(mine.get("created").longValue()).isPositive();

        JsonNode list = get("/v1/requests", KEY_A).expectStatus().isOk().expectBody(JsonNode.class).returnResult()
                .getResponseBody();
        assertThat(list.get("object").stringValue()).isEqualTo("list");
        assertThat(list.get("data").valueStream().map(r -> r.get("id").stringValue())).containsExactly(id);
        JsonNode othersList = get("/v1/requests", KEY_B).expectStatus().isOk().expectBody(JsonNode.class)
                .returnResult().getResponseBody();
        assertThat(othersList.get("data")).as("another key sees none of them").isEmpty();

        JsonNode foreign = get("/v1/requests/" + id, KEY_B).expectStatus().isNotFound().expectBody(JsonNode.class)
                .returnResult().getResponseBody();
        JsonNode unknown = get("/v1/requests/" + id + "-unknown", KEY_A).expectStatus().isNotFound()
                .expectBody(JsonNode.class).returnResult().getResponseBody();
        assertThat(foreign.at("/error/code").stringValue()).isEqualTo("request_not_found")
                .isEqualTo(unknown.at("/error/code").stringValue());
        assertThat(foreign.at("/error/type").stringValue()).isEqualTo(unknown.at("/error/type").stringValue());

        cancel(KEY_A, id);
        events.get(20, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(10)).until(() -> !contexts.isLive(id));

        JsonNode ended = get("/v1/requests/" + id, KEY_A).expectStatus().isOk().expectBody(JsonNode.class)
                .returnResult().getResponseBody();
        assertThat(ended.get("state").stringValue()).as("the state records why it ended").isEqualTo("cancelled");
        assertThat(ended.get("cancel_reason").stringValue()).isEqualTo("client_cancel");
        assertThat(ended.get("finish_reason").stringValue()).isEqualTo("abort");
        assertThat(ended.get("completion_tokens").intValue()).isEqualTo(hi.length);
        assertThat(get("/v1/requests", KEY_A).expectStatus().isOk().expectBody(JsonNode.class).returnResult()
                .getResponseBody().get("data")).as("no longer in flight").isEmpty();
        get("/v1/requests/" + id, KEY_B).expectStatus().isNotFound();
    }

    @Test
    void aRequestThatFinishedKeepsItsFinishReason() throws Exception {
        String id = id("finished");
        CompletableFuture<List<String>> answer = stream(KEY_A, id, "/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"abc\",\"max_tokens\":1}");
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));
        generator.finish(id);
        answer.get(20, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(10)).until(() -> !contexts.isLive(id));

        get("/v1/requests/" + id, KEY_A).expectStatus().isOk().expectBody()
                .jsonPath("$.state").isEqualTo("completed")
                .jsonPath("$.finish_reason").isEqualTo("length")
                .jsonPath("$.cancel_reason").isEmpty()
                .jsonPath("$.completion_tokens").isEqualTo(1);
    }

    @Test
    void aStopStringThatEndedTheAnswerAtTheGatewayIsRecordedAsStopNotAbort() throws Exception {
        String id = id("stop-string");
        CompletableFuture<List<String>> answer = stream(KEY_A, id, "/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"abc\",\"max_tokens\":50,\"stop\":[\"i\"]}");
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));
        int[] hi = tokensOf("hi");
        for (int i = 0; i < hi.length; i++) {
            generator.tokens(id).tryEmitNext(new GeneratedToken(i, hi[i], null));
        }

        JsonNode body = JSON.readTree(String.join("", answer.get(20, TimeUnit.SECONDS)));
        assertThat(body.at("/choices/0/text").stringValue()).isEqualTo("h");
        assertThat(body.at("/choices/0/finish_reason").stringValue()).isEqualTo("stop");
        await().atMost(Duration.ofSeconds(10)).until(() -> !contexts.isLive(id));
        get("/v1/requests/" + id, KEY_A).expectStatus().isOk().expectBody()
                .jsonPath("$.finish_reason").isEqualTo("stop");
    }

    @Test
    void aBadIdIs400AndAWrongMethodOnTheListIs405() {
        get("/v1/requests/bad id", KEY_A).expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_request_id");
        http.delete().uri("/v1/requests").headers(h -> h.setBearerAuth(KEY_A)).exchange()
                .expectStatus().isEqualTo(405).expectHeader().valueEquals("Allow", "GET");
    }

    // --- keys ---------------------------------------------------------------------------------------------------

    @Test
    void theRequestApiAndTheTokenizerNeedAKeyButHealthAndVersionDoNot() {
        get("/v1/requests", null).expectStatus().isUnauthorized().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_api_key");
        get("/v1/requests/some-id", null).expectStatus().isUnauthorized();
        post("/tokenize", null, "{\"prompt\":\"hi\"}").expectStatus().isUnauthorized().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_api_key");
        post("/detokenize", null, "{\"tokens\":[1]}").expectStatus().isUnauthorized();

        byte[] health = get("/health", null).expectStatus().isOk().expectBody().returnResult().getResponseBody();
        assertThat(health).as("vLLM's /health: 200 with an empty body").isNullOrEmpty();
        get("/version", null).expectStatus().isOk().expectBody().jsonPath("$.version").isNotEmpty();
    }

    // --- tokenize and detokenize --------------------------------------------------------------------------------

    @Test
    void tokenizeAnswersInVllmsShapeWithTheTokensTheCompletionWouldUse() {
        JsonNode answer = tokenize("{\"model\":\"ripcord-small\",\"prompt\":\"abc\"}");
        assertThat(answer.propertyNames()).containsExactlyInAnyOrder("count", "max_model_len", "tokens");
        assertThat(answer.get("count").intValue()).isEqualTo(answer.get("tokens").size())
                .isEqualTo(promptTokens("abc"));
        assertThat(answer.get("max_model_len").intValue()).isPositive();

        JsonNode without = tokenize("{\"prompt\":\"abc\",\"add_special_tokens\":false}");
        assertThat(without.get("count").intValue()).as("without the BOS token").isEqualTo(3);
        assertThat(tokenize("{\"prompt\":\"abc\",\"add_special_tokens\":true}").get("tokens"))
                .isEqualTo(answer.get("tokens"));

        JsonNode chat = tokenize("{\"messages\":[{\"role\":\"user\",\"content\":\"abc\"}]}");
        assertThat(chat.get("count").intValue()).as("the rendered chat template is longer than its content")
                .isGreaterThan(answer.get("count").intValue());
    }

    @Test
    void detokenizeTurnsTokenizeBack() {
        JsonNode tokens = tokenize("{\"prompt\":\"héllo, wörld\",\"add_special_tokens\":false}").get("tokens");

        post("/detokenize", KEY_A, "{\"model\":\"ripcord-small\",\"tokens\":" + tokens + "}").expectStatus().isOk()
                .expectBody().jsonPath("$.prompt").isEqualTo("héllo, wörld");
    }

    @Test
    void tokenizerMistakesAreOpenAiErrorsNamingTheField() {
        post("/tokenize", KEY_A, "{\"prompt\":\"a\",\"echo\":true}").expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("unknown_parameter").jsonPath("$.error.param").isEqualTo("echo");
        post("/tokenize", KEY_A, "{\"model\":\"gpt-4\",\"prompt\":\"a\"}").expectStatus().isNotFound().expectBody()
                .jsonPath("$.error.code").isEqualTo("model_not_found");
        post("/tokenize", KEY_A, "{}").expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("missing_required_parameter");
        post("/tokenize", KEY_A, "{\"prompt\":\"a\",\"add_special_tokens\":\"yes\"}").expectStatus().isBadRequest()
                .expectBody().jsonPath("$.error.code").isEqualTo("invalid_type")
                .jsonPath("$.error.param").isEqualTo("add_special_tokens");
        post("/tokenize", KEY_A, "not json").expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_json");
        post("/detokenize", KEY_A, "{\"tokens\":[3,-1]}").expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_value").jsonPath("$.error.param").isEqualTo("tokens[1]");
        post("/detokenize", KEY_A, "{\"tokens\":\"abc\"}").expectStatus().isBadRequest().expectBody()
                .jsonPath("$.error.code").isEqualTo("invalid_type");
        http.get().uri("/tokenize").headers(h -> h.setBearerAuth(KEY_A)).exchange().expectStatus().isEqualTo(405)
                .expectHeader().valueEquals("Allow", "POST");
    }

    // --- helpers ------------------------------------------------------------------------------------------------

    private static String id(String what) {
        return "reqapi-" + what + "-" + UUID.randomUUID();
    }

    /** The prompt's length as the completion endpoint counts it (the served tokenizer's, BOS included). */
    private int promptTokens(String prompt) {
        return tokenize("{\"prompt\":\"" + prompt + "\"}").get("count").intValue();
    }

    /** The token ids of {@code text} without BOS: what a generation of exactly that text relays. */
    private int[] tokensOf(String text) {
        return tokenize("{\"prompt\":\"" + text + "\",\"add_special_tokens\":false}").get("tokens").valueStream()
                .mapToInt(JsonNode::intValue).toArray();
    }

    private JsonNode tokenize(String body) {
        return post("/tokenize", KEY_A, body).expectStatus().isOk().expectBody(JsonNode.class).returnResult()
                .getResponseBody();
    }

    /** Waits for the request to be in flight, then relays {@code tokens} and waits until the gateway counted them. */
    private void relay(String id, int[] tokens) {
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.isLive(id));
        for (int i = 0; i < tokens.length; i++) {
            generator.tokens(id).tryEmitNext(new GeneratedToken(i, tokens[i], null));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> contexts.find(id, identity(KEY_A))
                .map(s -> s.completionTokens() == tokens.length).orElse(false));
    }

    private void cancel(String key, String id) {
        post("/v1/requests/" + id + "/cancel", key, "").expectStatus().isOk()
                .expectBody().jsonPath("$.status").isEqualTo("cancelled");
    }

    private static String identity(String key) {
        return ApiKeys.identityOfHash(ApiKeys.hash(key));
    }

    /** Sends a request and collects its answer: the SSE data of a stream, or a body's text in pieces. */
    private CompletableFuture<List<String>> stream(String key, String id, String path, String body) {
        CompletableFuture<List<String>> answer = streaming.post().uri(path).contentType(MediaType.APPLICATION_JSON)
                .headers(h -> {
                    h.setBearerAuth(key);
                    h.set("X-Request-Id", id);
                })
                .bodyValue(body).retrieve().bodyToFlux(String.class)
                .collect(ArrayList<String>::new, ArrayList::add)
                .map(list -> (List<String>) list)
                .toFuture();
        answers.add(answer);
        return answer;
    }

    private WebTestClient.ResponseSpec get(String path, String key) {
        return http.get().uri(path).headers(h -> {
            if (key != null) {
                h.setBearerAuth(key);
            }
        }).exchange();
    }

    private WebTestClient.ResponseSpec post(String path, String key, String body) {
        return http.post().uri(path).contentType(MediaType.APPLICATION_JSON).headers(h -> {
            if (key != null) {
                h.setBearerAuth(key);
            }
        }).bodyValue(body).exchange();
    }
}
