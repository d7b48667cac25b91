package dev.ripcord.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One request identity, through the whole gateway on a real port: the ID the client sends (or the one the gateway
 * makes) is the one on every answer, the 401, 429 and 400 rejections included, the one the serving core sees in its
 * Reactor context, and the one in the MDC of every log line about the request. Each test uses its own API key, so
 * the per-key rate limit (one completion per hour here) is only ever reached on purpose.
 */
@SpringBootTest(classes = GatewayUnderTest.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.cancel.propagation=in-band",
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.gateway.auth.enabled=true",
                "ripcord.gateway.auth.rate-limit.limit-for-period=1",
                "ripcord.gateway.auth.rate-limit.limit-refresh-period=1h",
                "logging.level.dev.ripcord=DEBUG"})
class RequestIdentityTest {

    private static final String GENERATED = "req-[A-Za-z0-9]{24}";
    private static final String KEY_SERVED = "rk-reqid-served-0123456789";
    private static final String KEY_LIMITED = "rk-reqid-limited-0123456789";
    private static final String KEY_BAD_BODY = "rk-reqid-bad-body-0123456789";
    private static final String KEY_INVALID_ID = "rk-reqid-invalid-id-0123456789";

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        registry.add("ripcord.gateway.auth.api-key-hashes", () -> String.join(",", ApiKeys.hash(KEY_SERVED),
                ApiKeys.hash(KEY_LIMITED), ApiKeys.hash(KEY_BAD_BODY), ApiKeys.hash(KEY_INVALID_ID)));
    }

    @LocalServerPort
    int port;
    @Autowired
    ScriptedGenerator generator;

    private WebTestClient http;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger gatewayLogs = (Logger) LoggerFactory.getLogger("dev.ripcord.gateway");

    @BeforeEach
    void setUp() {
        http = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(Duration.ofSeconds(20))
                .build();
        logs.start();
        gatewayLogs.addAppender(logs);
    }

    @AfterEach
    void stopCapturing() {
        gatewayLogs.detachAppender(logs);
        logs.stop();
    }

    private static final String COMPLETION = "{\"model\":\"ripcord-small\",\"prompt\":\"hi\",\"max_tokens\":1}";

    private EntityExchangeResult<byte[]> post(String key, String requestId, String body) {
        return http.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .headers(h -> {
                    if (key != null) {
                        h.setBearerAuth(key);
                    }
                    if (requestId != null) {
                        h.set(RequestIds.HEADER, requestId);
                    }
                })
                .bodyValue(body).exchange().expectBody().returnResult();
    }

    private static JsonNode json(byte[] body) {
        return JsonMapper.builder().build().readTree(body);
    }

    private static String requestIdOf(EntityExchangeResult<?> result) {
        List<String> ids = result.getResponseHeaders().get(RequestIds.HEADER);
        assertThat(ids).as("exactly one X-Request-Id").hasSize(1);
        return ids.getFirst();
    }

    /** Every captured gateway line that mentions {@code id} has it, and only it, in its MDC; returns them. */
    private List<ILoggingEvent> linesAbout(String id) {
        List<ILoggingEvent> about = logs.list.stream().filter(e -> e.getFormattedMessage().contains(id)).toList();
        assertThat(about).as("log lines about %s", id).isNotEmpty();
        assertThat(about).allSatisfy(e -> assertThat(e.getMDCPropertyMap())
                .as("MDC of [%s] %s: %s", e.getThreadName(), e.getLoggerName(), e.getFormattedMessage())
                .containsEntry(RequestIds.CONTEXT_KEY, id));
        return about;
    }

    @Test
    void aValidClientIdIsEchoedIsTheBodyIdAndIsWhatTheCoreAndTheLogsSee() {
        String id = "client-7.a:b_c";
        generator.finish(id); // the tokens wait in the sink until the request subscribes

        EntityExchangeResult<byte[]> result = post(KEY_SERVED, id, COMPLETION);

        assertThat(result.getStatus().value()).isEqualTo(200);
        assertThat(requestIdOf(result)).isEqualTo(id);
        assertThat(json(result.getResponseBody()).get("id").stringValue()).isEqualTo(id);
        assertThat(generator.contextRequestIds).contains(id);
        assertThat(linesAbout(id)).extracting(ILoggingEvent::getLoggerName)
                .contains("dev.ripcord.gateway.openai.OpenAiHandler");
    }

    @Test
    void withoutAClientIdEveryAnswerGetsOneInTheDocumentedFormat() {
        EntityExchangeResult<byte[]> models = http.get().uri("/v1/models").header("Authorization", "Bearer " + KEY_SERVED)
                .exchange().expectBody().returnResult();
        EntityExchangeResult<byte[]> health = http.get().uri("/health").exchange().expectBody().returnResult();

        assertThat(requestIdOf(models)).matches(GENERATED);
        assertThat(requestIdOf(health)).matches(GENERATED);
        assertThat(requestIdOf(models)).isNotEqualTo(requestIdOf(health));
    }

    @Test
    void a401CarriesTheClientsIdOrAGeneratedOneAndItsLogLineCarriesItInTheMdc() {
        EntityExchangeResult<byte[]> withId = post(null, "unauth-1", COMPLETION);
        EntityExchangeResult<byte[]> withoutId = post("rk-not-a-key-000000000000", null, COMPLETION);

        assertThat(withId.getStatus().value()).isEqualTo(401);
        assertThat(json(withId.getResponseBody()).get("error").get("code").stringValue()).isEqualTo("invalid_api_key");
        assertThat(requestIdOf(withId)).isEqualTo("unauth-1");
        assertThat(withoutId.getStatus().value()).isEqualTo(401);
        assertThat(requestIdOf(withoutId)).matches(GENERATED);
        assertThat(linesAbout("unauth-1")).extracting(ILoggingEvent::getLoggerName)
                .contains("dev.ripcord.gateway.auth.ApiKeyFilter", "dev.ripcord.gateway.openai.OpenAiErrorHandler");
        linesAbout(requestIdOf(withoutId));
    }

    @Test
    void a429CarriesTheClientsId() {
        generator.finish("limited-1");
        assertThat(post(KEY_LIMITED, "limited-1", COMPLETION).getStatus().value()).isEqualTo(200);

        EntityExchangeResult<byte[]> limited = post(KEY_LIMITED, "limited-2", COMPLETION);

        assertThat(limited.getStatus().value()).isEqualTo(429);
        assertThat(json(limited.getResponseBody()).get("error").get("code").stringValue())
                .isEqualTo("rate_limit_exceeded");
        assertThat(requestIdOf(limited)).isEqualTo("limited-2");
        assertThat(generator.contextRequestIds).doesNotContain("limited-2");
        linesAbout("limited-2");
    }

    @Test
    void a400FromTheHandlerCarriesTheClientsId() {
        EntityExchangeResult<byte[]> result = post(KEY_BAD_BODY, "bad-body-1", "{not json");

        assertThat(result.getStatus().value()).isEqualTo(400);
        assertThat(json(result.getResponseBody()).get("error").get("code").stringValue()).isEqualTo("invalid_json");
        assertThat(requestIdOf(result)).isEqualTo("bad-body-1");
        linesAbout("bad-body-1");
    }

    @Test
    void anInvalidClientIdIsRefusedWith400BeforeAuthenticationAndTheAnswerCarriesAGeneratedId() {
        EntityExchangeResult<byte[]> authenticated = post(KEY_INVALID_ID, "bad id!", COMPLETION);
        EntityExchangeResult<byte[]> anonymous = post(null, "x".repeat(129), COMPLETION);

        for (EntityExchangeResult<byte[]> result : List.of(authenticated, anonymous)) {
            assertThat(result.getStatus().value()).isEqualTo(400);
            JsonNode error = json(result.getResponseBody()).get("error");
            assertThat(error.get("type").stringValue()).isEqualTo("invalid_request_error");
            assertThat(error.get("code").stringValue()).isEqualTo("invalid_request_id");
            assertThat(error.get("param").stringValue()).isEqualTo("X-Request-Id");
            assertThat(requestIdOf(result)).matches(GENERATED);
            linesAbout(requestIdOf(result));
        }
        assertThat(generator.contextRequestIds).noneMatch(id -> id.startsWith("bad id") || id.startsWith("xxx"));
    }
}
