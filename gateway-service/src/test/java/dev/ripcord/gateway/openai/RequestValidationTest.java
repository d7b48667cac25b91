package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.stream.Stream;

import dev.ripcord.gateway.generation.ByteTextCodec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.BodyInserters;
import reactor.core.publisher.Flux;

/** Every class of client mistake gets a 4xx OpenAI error body naming the field; none reaches the generator. */
class RequestValidationTest extends OpenAiEndpointTest {

    private static final String COMPLETIONS = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";

    static Stream<Arguments> badCompletionRequests() {
        return Stream.of(
                // syntax
                bad("{\"model\":", "invalid_json", null),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\"} trailing", "invalid_json", null),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"prompt\":\"q\"}", "invalid_json", null),
                bad("", "invalid_json", null),
                bad("   ", "invalid_json", null),
                bad("[{\"model\":\"ripcord-small\"}]", "invalid_json", null),
                bad("{'model':'ripcord-small'}", "invalid_json", null),
                bad("{\"model\":\"ripcord-small\",\"prompt\":" + "[".repeat(5_000) + "]".repeat(5_000) + "}",
                        "invalid_json", null),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":1" + "0".repeat(2_000) + "}",
                        "invalid_json", null),
                // unknown fields, for this endpoint
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"foo\":1}", "unknown_parameter", "foo"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[]}", "unknown_parameter", "messages"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_completion_tokens\":3}", "unknown_parameter",
                        "max_completion_tokens"),
                // missing
                bad("{\"prompt\":\"p\"}", "missing_required_parameter", "model"),
                bad("{\"model\":null,\"prompt\":\"p\"}", "missing_required_parameter", "model"),
                bad("{\"model\":\"ripcord-small\"}", "missing_required_parameter", "prompt"),
                // wrong types
                bad("{\"model\":7,\"prompt\":\"p\"}", "invalid_type", "model"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":{}}", "invalid_type", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[1,\"a\"]}", "invalid_type", "prompt[1]"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":\"10\"}", "invalid_type", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":5.5}", "invalid_type", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":1e30}", "invalid_type", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":\"true\"}", "invalid_type", "stream"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"temperature\":\"hot\"}", "invalid_type",
                        "temperature"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop\":[1]}", "invalid_type", "stop[0]"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop\":{}}", "invalid_type", "stop"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"ignore_eos\":1}", "invalid_type", "ignore_eos"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"user\":5}", "invalid_type", "user"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"timeout\":\"5\"}", "invalid_type", "timeout"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"seed\":1.5}", "invalid_type", "seed"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true,\"stream_options\":true}",
                        "invalid_type", "stream_options"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":\"yes\"}}", "invalid_type", "stream_options.include_usage"),
                // values out of range, including absurd ones
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":-1}", "invalid_value", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":0}", "invalid_value", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":101}", "invalid_value", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_tokens\":99999999999999999999999}",
                        "invalid_value", "max_tokens"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"temperature\":2.01}", "invalid_value", "temperature"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"temperature\":-0.1}", "invalid_value", "temperature"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"temperature\":1e400}", "invalid_value", "temperature"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"top_p\":0}", "invalid_value", "top_p"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"top_p\":1.5}", "invalid_value", "top_p"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"seed\":9223372036854775808}", "invalid_value", "seed"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}",
                        "invalid_value", "stop"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop\":[\"\"]}", "invalid_value", "stop[0]"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"n\":0}", "invalid_value", "n"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"timeout\":-1}", "invalid_value", "timeout"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"timeout\":0}", "invalid_value", "timeout"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"timeout\":1e300}", "invalid_value", "timeout"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream_options\":{\"include_usage\":true}}",
                        "invalid_value", "stream_options"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[]}", "invalid_value", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"\"}", "invalid_value", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[300]}", "invalid_value", "prompt[0]"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[-1]}", "invalid_value", "prompt[0]"),
                // valid OpenAI, not supported here
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"n\":9}", "invalid_value", "n"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[\"a\",\"b\"]}", "unsupported_value", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":[[1,2]]}", "unsupported_value", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"logprobs\":6}", "invalid_value", "logprobs"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"echo\":true}", "unsupported_value", "echo"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"presence_penalty\":2.5}", "invalid_value",
                        "presence_penalty"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"logit_bias\":{\"1\":101}}", "invalid_value",
                        "logit_bias.1"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"top_logprobs\":2}", "unknown_parameter",
                        "top_logprobs"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"suffix\":\"x\"}", "unsupported_value", "suffix"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"best_of\":2}", "unsupported_value", "best_of"),
                // encoding inside JSON strings
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"a\\ud800b\"}", "invalid_encoding", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop\":\"\\udc00\"}", "invalid_encoding", "stop"),
                // context window
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"" + "x".repeat(ByteTextCodec.CONTEXT_LENGTH) + "\"}",
                        "context_length_exceeded", "prompt"),
                bad("{\"model\":\"ripcord-small\",\"prompt\":\"" + "x".repeat(200) + "\",\"max_tokens\":57}",
                        "context_length_exceeded", "max_tokens"));
    }

    static Stream<Arguments> badChatRequests() {
        String user = "[{\"role\":\"user\",\"content\":\"hi\"}]";
        return Stream.of(
                bad("{\"model\":\"ripcord-small\"}", "missing_required_parameter", "messages"),
                bad("{\"model\":\"ripcord-small\",\"messages\":{}}", "invalid_type", "messages"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[]}", "invalid_value", "messages"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[\"hi\"]}", "invalid_type", "messages[0]"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"content\":\"hi\"}]}", "missing_required_parameter",
                        "messages[0].role"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
                        "unsupported_value", "messages[0].role"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
                        "invalid_value", "messages[0].role"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\"}]}", "missing_required_parameter",
                        "messages[0].content"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", "invalid_type",
                        "messages[0].content"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":"
                        + "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}", "unknown_parameter",
                        "messages[0].content[0].image_url"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":"
                        + "[{\"type\":\"image_url\"}]}]}", "unsupported_value", "messages[0].content[0].type"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}",
                        "missing_required_parameter", "messages[0].content[0].text"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}",
                        "unknown_parameter", "messages[0].tool_calls"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"prompt\":\"p\"}", "unknown_parameter",
                        "prompt"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"echo\":false}", "unknown_parameter", "echo"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"max_tokens\":3,\"max_completion_tokens\":4}",
                        "invalid_value", "max_completion_tokens"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"max_completion_tokens\":0}",
                        "invalid_value", "max_completion_tokens"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"response_format\":{\"type\":\"json_object\"}}",
                        "unsupported_value", "response_format.type"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"logprobs\":1}", "invalid_type",
                        "logprobs"),
                bad("{\"model\":\"ripcord-small\",\"messages\":" + user + ",\"top_logprobs\":1}", "invalid_value",
                        "top_logprobs"),
                bad("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\""
                        + "x".repeat(ByteTextCodec.CONTEXT_LENGTH) + "\"}]}", "context_length_exceeded", "messages"));
    }

    private static Arguments bad(String body, String code, String param) {
        return Arguments.of(body, code, param);
    }

    @ParameterizedTest(name = "[{index}] {1} {2}")
    @MethodSource("badCompletionRequests")
    void badCompletionRequestIs400NamingTheField(String body, String code, String param) {
        assertInvalid(post(COMPLETIONS, body), code, param);
        assertThat(generator.requests()).isEmpty();
    }

    @ParameterizedTest(name = "[{index}] {1} {2}")
    @MethodSource("badChatRequests")
    void badChatRequestIs400NamingTheField(String body, String code, String param) {
        assertInvalid(post(CHAT, body), code, param);
        assertThat(generator.requests()).isEmpty();
    }

    /** Regression: {@code max_token} was rejected without a word about {@code max_tokens}. */
    @Test
    void anUnknownFieldNamesTheNearestKnownFieldWhenItLooksLikeATypo() {
        String typo = assertInvalid(post(COMPLETIONS, "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"max_token\":3}"),
                "unknown_parameter", "max_token").get("message").stringValue();
        String message = assertInvalid(post(CHAT, "{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\","
                + "\"contnet\":\"hi\"}]}"), "unknown_parameter", "messages[0].contnet").get("message").stringValue();
        String far = assertInvalid(post(COMPLETIONS, "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"frobnicate\":1}"),
                "unknown_parameter", "frobnicate").get("message").stringValue();

        assertThat(typo).isEqualTo("Unrecognized request argument supplied: max_token; did you mean 'max_tokens'?");
        assertThat(message).endsWith("contnet; did you mean 'content'?");
        assertThat(far).isEqualTo("Unrecognized request argument supplied: frobnicate");
        assertThat(generator.requests()).isEmpty();
    }

    @Test
    void unknownModelIs404ModelNotFound() {
        assertError(post(COMPLETIONS, "{\"model\":\"gpt-4\",\"prompt\":\"p\"}"), 404, "invalid_request_error",
                "model_not_found", "model");
    }

    @Test
    void invalidUtf8BytesAre400InvalidEncoding() {
        byte[] body = "{\"model\":\"ripcord-small\",\"prompt\":\"a\u0000\"}".getBytes(StandardCharsets.UTF_8);
        body[body.length - 3] = (byte) 0xC3; // a lead byte followed by '"': not UTF-8

        WebTestClient.ResponseSpec response = client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(body).exchange();

        assertThat(assertInvalid(response, "invalid_encoding", null).get("message").stringValue())
                .contains("offset " + (body.length - 3));
    }

    @Test
    void bodyOverTheLimitIs413BeforeParsing() {
        String huge = "{\"model\":\"ripcord-small\",\"prompt\":\"" + "x".repeat(MAX_BODY_BYTES) + "\"}";

        assertError(post(COMPLETIONS, huge), 413, "invalid_request_error", "request_too_large", null);
    }

    @Test
    void chunkedBodyOverTheLimitIs413WithoutContentLength() {
        Flux<DataBuffer> chunks = Flux.range(0, 20).map(i ->
                DefaultDataBufferFactory.sharedInstance.wrap(("{\"prompt\":\"" + "y".repeat(1024)).getBytes(StandardCharsets.UTF_8)));

        assertError(client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON)
                        .body(chunks, DataBuffer.class).exchange(),
                413, "invalid_request_error", "request_too_large", null);
    }

    @Test
    void wrongContentTypeIs415() {
        assertError(client.post().uri(COMPLETIONS).contentType(MediaType.TEXT_PLAIN)
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange(),
                415, "invalid_request_error", "unsupported_media_type", null);
    }

    @Test
    void jsonInAnotherCharsetIs415() {
        assertError(client.post().uri(COMPLETIONS).header(HttpHeaders.CONTENT_TYPE, "application/json;charset=ISO-8859-1")
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}".getBytes(StandardCharsets.ISO_8859_1))
                        .exchange(),
                415, "invalid_request_error", "unsupported_media_type", null);
    }

    @Test
    void unreadableContentTypeIs415NotA500() {
        DataBuffer body = DefaultDataBufferFactory.sharedInstance.wrap(
                "{\"model\":\"ripcord-small\",\"prompt\":\"p\"}".getBytes(StandardCharsets.UTF_8));

        assertError(client.post().uri(COMPLETIONS).header(HttpHeaders.CONTENT_TYPE, "json;;=")
                        .body(BodyInserters.fromDataBuffers(Flux.just(body))).exchange(),
                415, "invalid_request_error", "unsupported_media_type", null);
    }

    @Test
    void unreadableAcceptIs406NotA500() {
        assertError(client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON).header(HttpHeaders.ACCEPT, "/;=")
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange(),
                406, "invalid_request_error", "not_acceptable", null);
    }

    @Test
    void acceptExcludingJsonAndEventStreamIs406() {
        assertError(client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON).accept(MediaType.TEXT_HTML)
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange(),
                406, "invalid_request_error", "not_acceptable", null);
    }

    @Test
    void openAiSdkAcceptHeaderIsFineForStreams() {
        generator.replay(tokensThenEos("ok"));

        client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON).accept(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}").exchange()
                .expectStatus().isOk().expectHeader().contentTypeCompatibleWith(MediaType.TEXT_EVENT_STREAM);
    }

    @Test
    void invalidTimeoutHeaderIs400() {
        assertInvalid(client.post().uri(COMPLETIONS).contentType(MediaType.APPLICATION_JSON)
                        .header(RequestParser.TIMEOUT_HEADER, "soon")
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange(),
                "invalid_value", RequestParser.TIMEOUT_HEADER);
    }

    @Test
    void unknownPathUnderV1Is404InOpenAiShape() {
        assertError(client.get().uri("/v1/engines").exchange(), 404, "invalid_request_error", "unknown_url", null);
    }

    @Test
    void pathsOutsideV1AreLeftToTheFramework() {
        client.get().uri("/actuator-ish").exchange().expectStatus().isNotFound()
                .expectBody().consumeWith(result -> assertThat(result.getResponseBodyContent()).isNullOrEmpty());
    }

    @Test
    void wrongMethodIs405WithAllow() {
        WebTestClient.ResponseSpec response = client.get().uri(COMPLETIONS).exchange();

        assertError(response, 405, "invalid_request_error", "method_not_allowed", null);
        response.expectHeader().valueEquals(HttpHeaders.ALLOW, "POST");
    }

    @Test
    void requestWithoutContentTypeIsReadAsJson() {
        generator.replay(tokensThenEos("ok"));

        client.post().uri(COMPLETIONS).bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}".getBytes(StandardCharsets.UTF_8))
                .exchange().expectStatus().isOk();
    }

    /**
     * Guards against any client mistake surfacing as a 5xx: mangled variants of a valid request (deleted, doubled
     * and swapped characters) must each get a 200 or a 4xx OpenAI body.
     */
    @Test
    void mangledRequestsNeverGet5xx() {
        generator.replay(tokensThenEos("ok"));
        String valid = "{\"model\":\"ripcord-small\",\"prompt\":[1,2,3],\"max_tokens\":5,\"temperature\":0.7,"
                + "\"stop\":[\"x\"],\"stream\":false,\"seed\":42,\"timeout\":3}";
        Random random = new Random(20_240_601);
        String noise = "{}[]\":,0123456789.-eE\\tfnu \u00e9";
        for (int i = 0; i < 300; i++) {
            StringBuilder body = new StringBuilder(valid);
            for (int edits = 1 + random.nextInt(3); edits > 0; edits--) {
                int at = random.nextInt(body.length());
                switch (random.nextInt(3)) {
                    case 0 -> body.deleteCharAt(at);
                    case 1 -> body.insert(at, noise.charAt(random.nextInt(noise.length())));
                    default -> body.setCharAt(at, noise.charAt(random.nextInt(noise.length())));
                }
            }
            String mangled = body.toString();
            int status = post(COMPLETIONS, mangled).returnResult(Void.class).getStatus().value();
            assertThat(status).as("status for %s", mangled).isIn(200, 400, 404);
        }
    }
}
