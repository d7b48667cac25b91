package dev.ripcord.gateway.openai;

import static org.springframework.web.reactive.function.server.RequestPredicates.path;

import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.RejectedExecutionException;

import dev.ripcord.gateway.generation.GenerationRequest.Kind;
import dev.ripcord.gateway.generation.TextCodec;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.info.BuildProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.MethodNotAllowedException;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * vLLM's root endpoints, in vLLM's shapes, so tools written for a vLLM server work against the gateway:
 *
 * <ul>
 *   <li>{@code GET /health}: 200 with an empty body while the gateway accepts traffic, 503 (empty) once it refuses
 *       it (readiness {@code REFUSING_TRAFFIC}, e.g. while shutting down). Open, like actuator health.</li>
 *   <li>{@code GET /version}: {@code {"version": "0.1.0-SNAPSHOT"}}, the gateway's build version. Open.</li>
 *   <li>{@code POST /tokenize}: {@code {model?, prompt | messages, add_special_tokens?}} &rarr;
 *       {@code {"count","max_model_len","tokens"}}. With {@code prompt} the tokens are those {@code /v1/completions}
 *       would send, with {@code messages} those {@code /v1/chat/completions} would (the chat template rendered), by
 *       the same rules and with the same 4xx errors. {@code add_special_tokens} (vLLM: default true for a prompt,
 *       false for messages) adds or leaves out the model's BOS token; absent, the tokens are exactly what the
 *       completion endpoint would use. API key required.</li>
 *   <li>{@code POST /detokenize}: {@code {model?, tokens}} &rarr; {@code {"prompt"}}; token ids out of the vocabulary
 *       are a 400 {@code invalid_value}. API key required.</li>
 * </ul>
 *
 * <p>Tokenizing is CPU work in proportion to the prompt (up to {@code max-body-size}): it runs on the parallel
 * scheduler, as the completion endpoints' parsing does, never on an event-loop thread. It is not blocking I/O, so it
 * does not belong on {@code boundedElastic}. When the model has a Jinja chat template, {@code /tokenize} runs on the
 * chat-template threads instead, as chat does, so that a template's render budget is spent there and not on the
 * parallel scheduler's few threads.
 */
@Configuration(proxyBeanMethods = false)
public class RootRoutes {

    private static final Set<String> TOKENIZE_FIELDS = Set.of("model", "prompt", "messages", "add_special_tokens",
            "parse_special");
    private static final Set<String> DETOKENIZE_FIELDS = Set.of("model", "tokens");

    @Bean
    RouterFunction<ServerResponse> rootRouter(TextCodec codec, OpenAiProperties properties,
            ObjectProvider<ApplicationAvailability> availability, ObjectProvider<BuildProperties> build,
            @Qualifier("chatTemplateScheduler") ObjectProvider<Scheduler> chatTemplateScheduler) {
        RequestParser parser = new RequestParser(codec, properties.maxTimeout());
        Scheduler tokenizeOn = codec.chatTemplate() == null ? Schedulers.parallel()
                : chatTemplateScheduler.getIfAvailable(Schedulers::parallel);
        String version = version(build.getIfAvailable());
        byte[] versionBody = OpenAiJson.bytes(OpenAiJson.MAPPER.createObjectNode().put("version", version));
        return RouterFunctions.route()
                .GET("/health", request -> {
                    ApplicationAvailability state = availability.getIfAvailable();
                    boolean ready = state == null || state.getReadinessState() == ReadinessState.ACCEPTING_TRAFFIC;
                    return ready ? ServerResponse.ok().build() : ServerResponse.status(503).build();
                })
                .GET("/version", request -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(versionBody))
                .POST("/tokenize", request -> body(request, properties.maxBodyBytes())
                        .publishOn(tokenizeOn) // tokenizing costs CPU in proportion to the prompt
                        .onErrorMap(RejectedExecutionException.class, e -> ApiException.serviceUnavailable(
                                Duration.ofSeconds(1), "Too many chat templates are being rendered; retry shortly."))
                        .map(body -> tokenize(parser, codec, body))
                        .flatMap(RootRoutes::ok))
                .POST("/detokenize", request -> body(request, properties.maxBodyBytes())
                        .publishOn(Schedulers.parallel())
                        .map(body -> detokenize(parser, codec, body))
                        .flatMap(RootRoutes::ok))
                .route(path("/tokenize").or(path("/detokenize")), request -> notAllowed(request, HttpMethod.POST))
                .build();
    }

    static ObjectNode tokenize(RequestParser parser, TextCodec codec, byte[] body) {
        JsonNode root = RequestParser.readJsonObject(body);
        rejectUnknownFields(root, TOKENIZE_FIELDS);
        parser.checkOptionalModel(root.get("model"));
        boolean hasPrompt = present(root.get("prompt"));
        boolean hasMessages = present(root.get("messages"));
        if (hasPrompt == hasMessages) {
            throw ApiException.of(hasPrompt ? ErrorCode.INVALID_VALUE : ErrorCode.MISSING_REQUIRED_PARAMETER,
                    hasPrompt ? "messages" : "prompt", "Send exactly one of 'prompt' and 'messages'.");
        }
        Kind kind = hasMessages ? Kind.CHAT : Kind.COMPLETION;
        int[] tokens = parser.promptTokens(kind, hasMessages ? root.get("messages") : root.get("prompt"),
                RequestParser.parseSpecial(root));
        JsonNode special = root.get("add_special_tokens");
        if (present(special)) {
            tokens = withBos(tokens, codec.bosToken(),
                    RequestParser.booleanField(special, "add_special_tokens", true));
        }
        ObjectNode answer = OpenAiJson.MAPPER.createObjectNode();
        answer.put("count", tokens.length);
        answer.put("max_model_len", codec.contextLength());
        var array = answer.putArray("tokens");
        for (int token : tokens) {
            array.add(token);
        }
        return answer;
    }

    /** {@code tokens} with the BOS token first ({@code add}) or without it; unchanged for a codec without BOS. */
    static int[] withBos(int[] tokens, int bos, boolean add) {
        if (bos < 0) {
            return tokens;
        }
        boolean has = tokens.length > 0 && tokens[0] == bos;
        if (add && !has) {
            int[] with = new int[tokens.length + 1];
            with[0] = bos;
            System.arraycopy(tokens, 0, with, 1, tokens.length);
            return with;
        }
        return !add && has ? Arrays.copyOfRange(tokens, 1, tokens.length) : tokens;
    }

    static ObjectNode detokenize(RequestParser parser, TextCodec codec, byte[] body) {
        JsonNode root = RequestParser.readJsonObject(body);
        rejectUnknownFields(root, DETOKENIZE_FIELDS);
        parser.checkOptionalModel(root.get("model"));
        JsonNode tokens = root.get("tokens");
        if (!present(tokens)) {
            throw ApiException.of(ErrorCode.MISSING_REQUIRED_PARAMETER, "tokens", "Missing required parameter: 'tokens'.");
        }
        if (!tokens.isArray()) {
            throw RequestParser.wrongTypeOf("tokens", "an array of token ids", tokens);
        }
        int vocabulary = codec.vocabularySize();
        TextCodec.Detokenizer detokenizer = codec.newDetokenizer();
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < tokens.size(); i++) {
            JsonNode token = tokens.get(i);
            String param = "tokens[" + i + "]";
            if (!token.isIntegralNumber()) {
                throw RequestParser.wrongTypeOf(param, "an integer token id", token);
            }
            if (!token.canConvertToInt() || token.intValue() < 0 || token.intValue() >= vocabulary) {
                throw ApiException.of(ErrorCode.INVALID_VALUE, param, "'%s' must be a token id between 0 and %d.",
                        param, vocabulary - 1);
            }
            text.append(detokenizer.accept(token.intValue()));
        }
        text.append(detokenizer.flush());
        return OpenAiJson.MAPPER.createObjectNode().put("prompt", text.toString());
    }

    private static void rejectUnknownFields(JsonNode root, Set<String> known) {
        for (String name : root.propertyNames()) {
            if (!known.contains(name)) {
                throw ApiException.of(ErrorCode.UNKNOWN_PARAMETER, name, "Unrecognized request argument supplied: %s%s",
                        name.length() > 100 ? name.substring(0, 100) + "..." : name,
                        RequestParser.didYouMean(name, new TreeSet<>(known)));
            }
        }
    }

    private static boolean present(JsonNode node) {
        return node != null && !node.isNull();
    }

    /** The body, at most {@code limit} bytes (413 beyond), without blocking. */
    private static Mono<byte[]> body(ServerRequest request, int limit) {
        long declared = request.headers().contentLength().orElse(-1);
        if (declared > limit) {
            return Mono.error(tooLarge(limit));
        }
        return DataBufferUtils.join(request.body(BodyExtractors.toDataBuffers()), limit)
                .map(buffer -> {
                    try {
                        byte[] bytes = new byte[buffer.readableByteCount()];
                        buffer.read(bytes);
                        return bytes;
                    } finally {
                        DataBufferUtils.release(buffer);
                    }
                })
                .onErrorMap(DataBufferLimitException.class, e -> tooLarge(limit))
                .defaultIfEmpty(new byte[0]);
    }

    private static ApiException tooLarge(int limit) {
        return ApiException.of(ErrorCode.REQUEST_TOO_LARGE, null,
                "The request body is larger than the limit of %d bytes.", limit);
    }

    private static Mono<ServerResponse> ok(ObjectNode body) {
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(OpenAiJson.bytes(body));
    }

    private static Mono<ServerResponse> notAllowed(ServerRequest request, HttpMethod allowed) {
        return Mono.error(new MethodNotAllowedException(request.method(), Set.of(allowed)));
    }

    /** The build's version (Spring Boot's build info), else the jar manifest's, else {@code unknown}. */
    static String version(BuildProperties build) {
        if (build != null && build.getVersion() != null) {
            return build.getVersion();
        }
        String manifest = RootRoutes.class.getPackage().getImplementationVersion();
        return manifest != null ? manifest : "unknown";
    }
}
