package dev.ripcord.gateway.openai;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.context.TestPropertySource;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Shared fixture of the endpoint tests: one cached context per suite ({@link OpenAiTestContext}, a 16KB body
 * limit), a fresh script per test.
 */
@SpringJUnitConfig(OpenAiTestContext.class)
@TestPropertySource(properties = "ripcord.gateway.openai.max-body-size=16KB")
abstract class OpenAiEndpointTest {

    static final int MAX_BODY_BYTES = 16 * 1024;

    @Autowired
    ApplicationContext context;
    @Autowired
    ScriptedTokenGenerator generator;

    WebTestClient client;

    @BeforeEach
    void bindClient() {
        generator.reset();
        client = WebTestClient.bindToApplicationContext(context).configureClient()
                .responseTimeout(Duration.ofSeconds(10))
                .build();
    }

    WebTestClient.ResponseSpec post(String path, String json) {
        return client.post().uri(path).contentType(MediaType.APPLICATION_JSON).bodyValue(json).exchange();
    }

    /** The raw response body, as the client got it. */
    static String raw(WebTestClient.ResponseSpec response) {
        byte[] body = response.expectBody().returnResult().getResponseBodyContent();
        return body == null ? "" : new String(body, StandardCharsets.UTF_8);
    }

    static JsonNode json(String body) {
        return OpenAiJson.MAPPER.readTree(body);
    }

    /** Splits an SSE body into its {@code data:} payloads, checking the exact OpenAI framing on the way. */
    static List<String> ssePayloads(String body) {
        assertThat(body).endsWith("data: [DONE]\n\n");
        List<String> payloads = new ArrayList<>();
        for (String event : body.split("\n\n")) {
            assertThat(event).startsWith("data: ");
            payloads.add(event.substring("data: ".length()));
        }
        return payloads;
    }

    /** The JSON chunks of an SSE body, without the final {@code [DONE]}. */
    static List<JsonNode> chunks(String body) {
        List<String> payloads = ssePayloads(body);
        assertThat(payloads.getLast()).isEqualTo("[DONE]");
        return payloads.subList(0, payloads.size() - 1).stream().map(OpenAiEndpointTest::json).toList();
    }

    /** The concatenated text of completion chunks. */
    static String completionText(List<JsonNode> chunks) {
        StringBuilder text = new StringBuilder();
        chunks.forEach(chunk -> chunk.get("choices").forEach(choice -> text.append(choice.get("text").stringValue())));
        return text.toString();
    }

    /** Asserts an OpenAI error body and returns it. */
    static JsonNode assertError(WebTestClient.ResponseSpec response, int status, String type, String code,
            String param) {
        response.expectStatus().isEqualTo(status)
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectHeader().exists(RequestIds.HEADER);
        JsonNode body = json(raw(response));
        JsonNode error = body.get("error");
        assertThat(body.propertyNames()).containsExactly("error");
        assertThat(error.propertyNames()).containsExactly("message", "type", "param", "code");
        assertThat(error.get("type").stringValue()).isEqualTo(type);
        assertThat(error.get("code").stringValue()).isEqualTo(code);
        if (param == null) {
            assertThat(error.get("param").isNull()).as("param of %s", error).isTrue();
        } else {
            assertThat(error.get("param").stringValue()).isEqualTo(param);
        }
        assertThat(error.get("message").stringValue()).isNotBlank().doesNotContain("Exception").doesNotContain("\tat ");
        return error;
    }

    static JsonNode assertInvalid(WebTestClient.ResponseSpec response, String code, String param) {
        return assertError(response, 400, "invalid_request_error", code, param);
    }
}
