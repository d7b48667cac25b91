package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import dev.ripcord.gateway.generation.ByteTextCodec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * Bad input: one table of hostile request bodies and headers, sent as raw bytes to both generation
 * endpoints through a real Reactor Netty server (so framing, chunked bodies and byte-level encoding are the real
 * thing, not an in-memory shortcut). Every row must get its 4xx with an OpenAI error body naming the problem, never a
 * 5xx, never reach the generator; and after the whole table the same server still serves a normal request.
 *
 * <p>{@link RequestValidationTest} checks each rule's wording in memory; this table is the hostile-client view.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HostileInputTest extends OpenAiEndpointTest {

    private static final String COMPLETIONS = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";
    private static final String MODEL = "\"model\":\"ripcord-small\"";
    private static final String USER = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

    private DisposableServer server;
    private WebTestClient http;

    /** One hostile request and what it must get. {@code contentType} null sends none; {@code chunked} omits the length. */
    record Case(String endpoint, String name, String contentType, byte[] body, boolean chunked, int status,
            String code, String param) {

        @Override
        public String toString() {
            return endpoint.substring(endpoint.lastIndexOf('/') + 1) + ": " + name;
        }
    }

    @BeforeEach
    void startServerOnce() {
        if (server == null) {
            server = HttpServer.create().host("127.0.0.1").port(0)
                    .handle(new ReactorHttpHandlerAdapter(WebHttpHandlerBuilder.applicationContext(context).build()))
                    .bindNow(Duration.ofSeconds(10));
            http = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + server.port())
                    .responseTimeout(Duration.ofSeconds(10)).build();
        }
    }

    @AfterAll
    void stopServer() {
        if (server != null) {
            server.disposeNow(Duration.ofSeconds(10));
        }
    }

    Stream<Case> hostileRequests() {
        List<Case> cases = new ArrayList<>();
        for (String endpoint : List.of(COMPLETIONS, CHAT)) {
            boolean chat = endpoint.equals(CHAT);
            String valid = "{" + MODEL + "," + (chat ? USER : "\"prompt\":\"p\"");
            Table t = new Table(endpoint, cases);

            // --- not JSON, or not a JSON object -------------------------------------------------------------
            t.json("empty body", "", "invalid_json", null);
            t.json("whitespace only", " \r\n\t ", "invalid_json", null);
            t.json("a byte-order mark only", "\uFEFF", "invalid_json", null);
            t.json("truncated after the opening brace", "{", "invalid_json", null);
            t.json("truncated after a key", "{" + MODEL.substring(0, 8), "invalid_json", null);
            t.json("truncated before the closing brace", valid, "invalid_json", null);
            t.json("truncated inside a string", valid.substring(0, valid.length() - 2), "invalid_json", null);
            t.json("a stray closing brace", "}", "invalid_json", null);
            t.json("trailing garbage", valid + "} x", "invalid_json", null);
            t.json("two objects", valid + "}" + valid + "}", "invalid_json", null);
            t.json("trailing comma", valid + ",}", "invalid_json", null);
            t.json("single quotes", "{'model':'ripcord-small'}", "invalid_json", null);
            t.json("a comment", "{/* hi */" + MODEL + "}", "invalid_json", null);
            t.json("NaN literal", valid + ",\"temperature\":NaN}", "invalid_json", null);
            t.json("raw control character in a string", "{" + MODEL + ",\"user\":\"a\u0001b\"}", "invalid_json", null);
            t.json("duplicate key", valid + "," + MODEL + "}", "invalid_json", null);
            t.json("a number with 2000 digits", valid + ",\"max_tokens\":1" + "0".repeat(2000) + "}", "invalid_json",
                    null);
            t.json("3 000 nested arrays", "{" + MODEL + ",\"stop\":" + "[".repeat(3_000) + "]".repeat(3_000) + "}",
                    "invalid_json", null);
            t.json("JSON null", "null", "invalid_json", null);
            t.json("an array", "[" + valid + "}]", "invalid_json", null);
            t.json("a string", "\"hello\"", "invalid_json", null);
            t.json("a number", "42", "invalid_json", null);
            t.json("a boolean", "true", "invalid_json", null);

            // --- bytes that are not UTF-8 -------------------------------------------------------------------
            for (Map.Entry<String, String> bad : Map.of(
                    "a lone continuation byte", "80",
                    "an overlong encoding of '/'", "c0af",
                    "a truncated 3-byte sequence", "e282",
                    "the byte 0xFF", "ff",
                    "an encoded UTF-16 surrogate (CESU-8)", "eda080").entrySet()) {
                t.add("invalid UTF-8 inside a string: " + bad.getKey(), "application/json",
                        concat(valid + ",\"user\":\"a", bad.getValue(), "b\"}"), false, 400, "invalid_encoding", null);
                t.add("invalid UTF-8 between tokens: " + bad.getKey(), "application/json",
                        concat(valid + ",", bad.getValue(), "}"), false, 400, "invalid_encoding", null);
            }
            t.add("a UTF-16 body", "application/json", (valid + "}").getBytes(StandardCharsets.UTF_16LE), false,
                    400, "invalid_json", null);
            t.json("an unpaired surrogate escape in the prompt", chat
                    ? "{" + MODEL + ",\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800\"}]}"
                    : "{" + MODEL + ",\"prompt\":\"\\udfff\"}", "invalid_encoding", chat ? "messages[0].content" : "prompt");
            t.json("an unpaired surrogate escape in a stop string", valid + ",\"stop\":[\"\\ud834\"]}",
                    "invalid_encoding", "stop[0]");

            // --- too large ------------------------------------------------------------------------------------
            String huge = valid + ",\"user\":\"" + "x".repeat(MAX_BODY_BYTES) + "\"}";
            t.add("over max-body-size with Content-Length", "application/json", utf8(huge), false, 413,
                    "request_too_large", null);
            t.add("over max-body-size, chunked (no Content-Length)", "application/json", utf8(huge), true, 413,
                    "request_too_large", null);
            t.add("far over max-body-size, chunked", "application/json",
                    utf8(valid + ",\"user\":\"" + "y".repeat(40 * MAX_BODY_BYTES) + "\"}"), true, 413,
                    "request_too_large", null);
            t.add("a non-JSON body over max-body-size, chunked", "application/json", new byte[2 * MAX_BODY_BYTES],
                    true, 413, "request_too_large", null);

            // --- wrong content type -----------------------------------------------------------------------------
            for (String type : List.of("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                    "application/xml", "application/json; charset=utf-16", "application/json; charset=nonsense",
                    "application/*", "*/*;;", "json")) {
                t.add("Content-Type " + type, type, utf8(valid + "}"), false, 415, "unsupported_media_type", null);
            }

            // --- unknown fields -----------------------------------------------------------------------------------
            for (String unknown : List.of("foo", "Model", "tools", "functions", "prompt_cache_key", "reasoning_effort",
                    "", "x".repeat(500))) {
                String param = unknown;
                t.json("unknown field '" + (unknown.length() > 20 ? unknown.substring(0, 20) + "..." : unknown) + "'",
                        valid + ",\"" + unknown + "\":1}", "unknown_parameter", param);
            }
            t.json("a field of the other endpoint", valid + (chat ? ",\"prompt\":\"p\"}" : "," + USER + "}"),
                    "unknown_parameter", chat ? "prompt" : "messages");

            // --- wrong types, every field -------------------------------------------------------------------
            List<String[]> fields = new ArrayList<>(List.of(
                    new String[] {"model", "5"}, new String[] {"stream", "\"true\""},
                    new String[] {"max_tokens", "\"10\""}, new String[] {"max_tokens", "10.5"},
                    new String[] {"temperature", "\"hot\""}, new String[] {"top_p", "[]"},
                    new String[] {"seed", "\"42\""}, new String[] {"seed", "4.2"}, new String[] {"stop", "5"},
                    new String[] {"stop", "{}"}, new String[] {"user", "{}"}, new String[] {"n", "true"},
                    new String[] {"ignore_eos", "\"no\""}, new String[] {"timeout", "\"30\""},
                    new String[] {"logprobs", "\"yes\""}, new String[] {"presence_penalty", "\"0\""},
                    new String[] {"frequency_penalty", "false"}, new String[] {"logit_bias", "[]"},
                    new String[] {"top_k", "\"5\""}, new String[] {"top_k", "1.5"}, new String[] {"min_p", "\"0\""},
                    new String[] {"repetition_penalty", "true"}, new String[] {"stop_token_ids", "5"}));
            if (chat) {
                fields.addAll(List.of(new String[] {"messages", "\"hi\""}, new String[] {"max_completion_tokens", "\"3\""},
                        new String[] {"top_logprobs", "\"3\""}, new String[] {"logprobs", "1"},
                        new String[] {"response_format", "\"text\""}, new String[] {"parallel_tool_calls", "1"},
                        new String[] {"metadata", "[]"}, new String[] {"store", "\"yes\""}));
            } else {
                fields.addAll(List.of(new String[] {"prompt", "true"}, new String[] {"prompt", "{}"},
                        new String[] {"echo", "\"no\""}, new String[] {"best_of", "\"1\""}));
            }
            for (String[] field : fields) {
                String body = field[0].equals("model") || field[0].equals("messages") || field[0].equals("prompt")
                        ? withField(chat, field[0], field[1])
                        : valid + ",\"" + field[0] + "\":" + field[1] + "}";
                t.json("wrong type: " + field[0] + "=" + field[1], body, "invalid_type", field[0]);
            }
            t.json("wrong type: stream_options=true", valid + ",\"stream\":true,\"stream_options\":true}",
                    "invalid_type", "stream_options");
            t.json("wrong type: stream_options.include_usage=1",
                    valid + ",\"stream\":true,\"stream_options\":{\"include_usage\":1}}", "invalid_type",
                    "stream_options.include_usage");
            if (chat) {
                t.json("wrong type: a message", "{" + MODEL + ",\"messages\":[5]}", "invalid_type", "messages[0]");
                t.json("wrong type: a role", "{" + MODEL + ",\"messages\":[{\"role\":1,\"content\":\"x\"}]}",
                        "invalid_type", "messages[0].role");
                t.json("wrong type: a content", "{" + MODEL + ",\"messages\":[{\"role\":\"user\",\"content\":{}}]}",
                        "invalid_type", "messages[0].content");
            } else {
                t.json("wrong type: a token id", "{" + MODEL + ",\"prompt\":[1,\"2\"]}", "invalid_type", "prompt[1]");
            }

            // --- negative, zero and absurd numbers ----------------------------------------------------------------
            String maxParam = chat ? "max_completion_tokens" : "max_tokens";
            for (String n : List.of("-1", "0", "101", "2147483648", "9223372036854775808", "-9223372036854775809",
                    "99999999999999999999999999999")) {
                t.json(maxParam + "=" + n, valid + ",\"" + maxParam + "\":" + n + "}", "invalid_value", maxParam);
            }
            t.json("max_tokens=1e9 (not an integer)", valid + ",\"max_tokens\":1e9}", "invalid_type", "max_tokens");
            for (String v : List.of("-0.01", "2.0001", "1e308", "-1e308", "1e400")) {
                t.json("temperature=" + v, valid + ",\"temperature\":" + v + "}", "invalid_value", "temperature");
            }
            for (String v : List.of("0", "-0.5", "1.0000001", "1e400")) {
                t.json("top_p=" + v, valid + ",\"top_p\":" + v + "}", "invalid_value", "top_p");
            }
            t.json("n=0", valid + ",\"n\":0}", "invalid_value", "n");
            t.json("n=-5", valid + ",\"n\":-5}", "invalid_value", "n");
            t.json("n=1000000", valid + ",\"n\":1000000}", "invalid_value", "n");
            t.json("n=9 (over max-n)", valid + ",\"n\":9}", "invalid_value", "n");
            if (chat) {
                t.json("top_logprobs=21", valid + ",\"logprobs\":true,\"top_logprobs\":21}", "invalid_value",
                        "top_logprobs");
                t.json("top_logprobs=-1", valid + ",\"logprobs\":true,\"top_logprobs\":-1}", "invalid_value",
                        "top_logprobs");
                t.json("top_logprobs without logprobs", valid + ",\"top_logprobs\":2}", "invalid_value",
                        "top_logprobs");
            } else {
                t.json("logprobs=6", valid + ",\"logprobs\":6}", "invalid_value", "logprobs");
                t.json("logprobs=-1", valid + ",\"logprobs\":-1}", "invalid_value", "logprobs");
                t.json("logprobs=2^31", valid + ",\"logprobs\":2147483648}", "invalid_value", "logprobs");
            }
            t.json("presence_penalty=-2.01", valid + ",\"presence_penalty\":-2.01}", "invalid_value",
                    "presence_penalty");
            t.json("frequency_penalty=1e300", valid + ",\"frequency_penalty\":1e300}", "invalid_value",
                    "frequency_penalty");
            t.json("frequency_penalty=1e400", valid + ",\"frequency_penalty\":1e400}", "invalid_value",
                    "frequency_penalty");
            t.json("top_k=-2", valid + ",\"top_k\":-2}", "invalid_value", "top_k");
            t.json("top_k=2^63", valid + ",\"top_k\":9223372036854775807}", "invalid_value", "top_k");
            t.json("min_p=1.01", valid + ",\"min_p\":1.01}", "invalid_value", "min_p");
            t.json("min_p=-0.1", valid + ",\"min_p\":-0.1}", "invalid_value", "min_p");
            t.json("repetition_penalty=0", valid + ",\"repetition_penalty\":0}", "invalid_value",
                    "repetition_penalty");
            t.json("repetition_penalty=1e400", valid + ",\"repetition_penalty\":1e400}", "invalid_value",
                    "repetition_penalty");
            t.json("logit_bias key not a token id", valid + ",\"logit_bias\":{\"x\":1}}", "invalid_value",
                    "logit_bias.x");
            t.json("logit_bias key outside the vocabulary", valid + ",\"logit_bias\":{\"99999999999\":1}}",
                    "invalid_value", "logit_bias.99999999999");
            t.json("logit_bias value 100.5", valid + ",\"logit_bias\":{\"1\":100.5}}", "invalid_value",
                    "logit_bias.1");
            t.json("logit_bias value a string", valid + ",\"logit_bias\":{\"1\":\"5\"}}", "invalid_type",
                    "logit_bias.1");
            t.json("stop_token_ids -1", valid + ",\"stop_token_ids\":[-1]}", "invalid_value", "stop_token_ids[0]");
            t.json("stop_token_ids a string", valid + ",\"stop_token_ids\":[1,\"2\"]}", "invalid_type",
                    "stop_token_ids[1]");
            t.json("seed=2^63", valid + ",\"seed\":9223372036854775808}", "invalid_value", "seed");
            for (String v : List.of("-5", "0", "1e12", "1e400")) {
                t.json("timeout=" + v, valid + ",\"timeout\":" + v + "}", "invalid_value", "timeout");
            }
            t.json("5 stop strings", valid + ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "invalid_value", "stop");
            t.json("an empty stop string", valid + ",\"stop\":\"\"}", "invalid_value", "stop");
            if (!chat) {
                t.json("best_of=0", valid + ",\"best_of\":0}", "unsupported_value", "best_of");
                t.json("token id -1", "{" + MODEL + ",\"prompt\":[-1]}", "invalid_value", "prompt[0]");
                t.json("token id 2^31", "{" + MODEL + ",\"prompt\":[2147483648]}", "invalid_value", "prompt[0]");
                t.json("an empty prompt", "{" + MODEL + ",\"prompt\":\"\"}", "invalid_value", "prompt");
                t.json("a prompt longer than the context", "{" + MODEL + ",\"prompt\":\""
                        + "x".repeat(ByteTextCodec.CONTEXT_LENGTH) + "\"}", "context_length_exceeded", "prompt");
            } else {
                t.json("no messages", "{" + MODEL + ",\"messages\":[]}", "invalid_value", "messages");
                t.json("a message with an unknown role", "{" + MODEL
                        + ",\"messages\":[{\"role\":\"root\",\"content\":\"x\"}]}", "invalid_value", "messages[0].role");
            }

            // --- missing or unknown model -------------------------------------------------------------------------
            t.json("no model", "{" + (chat ? USER : "\"prompt\":\"p\"") + "}", "missing_required_parameter", "model");
            t.add("an unknown model", "application/json", utf8(withField(chat, "model", "\"gpt-4o\"")), false, 404,
                    "model_not_found", "model");
        }
        return cases.stream();
    }

    @Order(1)
    @ParameterizedTest(name = "{0}")
    @MethodSource("hostileRequests")
    void hostileRequestGetsItsClientErrorNeverA5xx(Case c) {
        WebTestClient.RequestBodySpec request = http.post().uri(c.endpoint());
        if (c.contentType() != null) {
            request.header(HttpHeaders.CONTENT_TYPE, c.contentType());
        }
        // Raw buffers: the client must not parse (and refuse) the hostile Content-Type itself.
        if (!c.chunked()) {
            request.contentLength(c.body().length);
        }
        WebTestClient.ResponseSpec response = request.body(BodyInserters.fromDataBuffers(c.chunked()
                ? chunks(c.body()) : Flux.just(DefaultDataBufferFactory.sharedInstance.wrap(c.body())))).exchange();

        assertError(response, c.status(), "invalid_request_error", c.code(), c.param());
        assertThat(generator.requests()).as("reached the generator").isEmpty();
    }

    @Order(2)
    @Test
    void afterTheWholeTableTheServerStillServes() {
        for (String endpoint : List.of(COMPLETIONS, CHAT)) {
            generator.replay(tokensThenEos("fine"));
            String body = endpoint.equals(CHAT) ? "{" + MODEL + "," + USER + "}" : "{" + MODEL + ",\"prompt\":\"p\"}";
            http.post().uri(endpoint).contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange()
                    .expectStatus().isOk();
        }
        assertThat(generator.requests()).hasSize(2);
    }

    /** A body sent in 1 KiB chunks without a Content-Length (chunked transfer encoding). */
    private static Flux<DataBuffer> chunks(byte[] body) {
        int size = 1024;
        return Flux.range(0, (body.length + size - 1) / size).map(i -> DefaultDataBufferFactory.sharedInstance
                .wrap(java.util.Arrays.copyOfRange(body, i * size, Math.min(body.length, (i + 1) * size))));
    }

    private static String withField(boolean chat, String name, String value) {
        StringBuilder body = new StringBuilder("{");
        body.append(name.equals("model") ? "\"model\":" + value : MODEL);
        if (chat) {
            body.append(',').append(name.equals("messages") ? "\"messages\":" + value : USER);
        } else {
            body.append(',').append(name.equals("prompt") ? "\"prompt\":" + value : "\"prompt\":\"p\"");
        }
        return body.append('}').toString();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] concat(String before, String hex, String after) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(utf8(before));
        out.writeBytes(HexFormat.of().parseHex(hex));
        out.writeBytes(utf8(after));
        return out.toByteArray();
    }

    /** Adds rows for one endpoint. */
    private record Table(String endpoint, List<Case> cases) {

        void json(String name, String body, String code, String param) {
            add(name, "application/json", utf8(body), false, 400, code, param);
        }

        void add(String name, String contentType, byte[] body, boolean chunked, int status, String code,
                String param) {
            cases.add(new Case(endpoint, name, contentType, body, chunked, status, code, param));
        }
    }
}
