package dev.ripcord.gateway.openai;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.protocol.Suggestions;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.databind.JsonNode;

import dev.ripcord.gateway.generation.GenerationRequest.Kind;
import dev.ripcord.tokenizer.chat.ChatTemplateException;
import dev.ripcord.tokenizer.chat.JinjaChatTemplate;

/**
 * Reads an OpenAI request body into a {@link GenerationRequest}, or fails with the first problem as an
 * {@link ApiException} that names the offending field.
 *
 * <p>Design note: the body is walked as a JSON tree instead of being bound to a DTO, so every message can say
 * exactly which field is wrong and how, in OpenAI's wording ({@code Invalid type for 'max_tokens': expected an
 * integer, but got a string instead.}), and so unknown fields are caught by name. Checks run in a fixed order:
 * encoding and syntax, unknown fields, {@code model}, the scalar fields, the prompt (tokenized here), and last the
 * limits that need the prompt's length. {@code null} means "not given" for every optional field.
 *
 * <p>Tokenizing is CPU work proportional to the body: callers run this off the event loop.
 */
final class RequestParser {

    /** Request header carrying a deadline in seconds, as an alternative to the {@code timeout} field. */
    static final String TIMEOUT_HEADER = "X-Ripcord-Timeout";

    static final int MAX_STOP_STRINGS = 4;
    /**
     * Entries of {@code logit_bias}: each is a map entry on the request and a logit adjustment in every sampling
     * step, so the count is capped like {@code stop}'s; a use that bans or boosts a few hundred tokens fits.
     */
    static final int MAX_LOGIT_BIAS_ENTRIES = 300;
    /** Entries of {@code stop_token_ids}, checked against every sampled token. */
    static final int MAX_STOP_TOKEN_IDS = 64;

    private static final Set<String> COMMON_FIELDS = Set.of("model", "stream", "stream_options", "max_tokens",
            "temperature", "top_p", "seed", "stop", "user", "n", "ignore_eos", "timeout",
            "logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
            // vLLM's sampling extensions
            "top_k", "min_p", "repetition_penalty", "stop_token_ids",
            // Ripcord extension: special-token text in client text becomes special tokens (off by default)
            "parse_special",
            // vLLM's prefix-cache isolation: only requests with the same salt share cached prompt pages
            "cache_salt");
    private static final Set<String> COMPLETION_FIELDS = Set.of("prompt", "echo", "suffix", "best_of");
    private static final Set<String> CHAT_FIELDS = Set.of("messages", "max_completion_tokens", "top_logprobs",
            // accepted only with their neutral values, or ignored
            "response_format", "parallel_tool_calls", "metadata", "store");
    private static final Set<String> MESSAGE_FIELDS = Set.of("role", "content", "name");
    /** Unknown names longer than this get no "did you mean": no field is within a typo of them. */
    private static final int MAX_SUGGESTED_LENGTH = 64;
    /** {@code developer} is OpenAI's newer name for {@code system}; it is rendered as {@code system}. */
    private static final Set<String> CHAT_ROLES = Set.of("system", "developer", "user", "assistant");
    private static final Set<String> UNSUPPORTED_ROLES = Set.of("tool", "function");
    /** OpenAI's default {@code max_tokens} on completions (vLLM's too); chat defaults to the room left. */
    static final int COMPLETIONS_DEFAULT_MAX_TOKENS = 16;
    static final int MAX_COMPLETION_LOGPROBS = 5;
    static final int MAX_CHAT_TOP_LOGPROBS = 20;
    static final double MAX_REPETITION_PENALTY = 100;
    private static final Pattern SECONDS = Pattern.compile("[0-9]{1,10}(\\.[0-9]{1,9})?");
    private static final BigInteger NANOS_PER_SECOND = BigInteger.valueOf(1_000_000_000L);
    private static final int MAX_ECHOED_VALUE = 40;

    private final TextCodec codec;
    private final Duration maxTimeout;
    private final int maxN;

    RequestParser(TextCodec codec, Duration maxTimeout) {
        this(codec, maxTimeout, OpenAiProperties.DEFAULT_MAX_N);
    }

    RequestParser(TextCodec codec, Duration maxTimeout, int maxN) {
        this.codec = codec;
        this.maxTimeout = maxTimeout;
        this.maxN = maxN;
    }

    GenerationRequest parse(Kind kind, byte[] body, String requestId, @Nullable Duration headerTimeout) {
        JsonNode root = readObject(body);
        rejectUnknownFields(root, kind);

        String model = model(root.get("model"));
        boolean stream = bool(root.get("stream"), "stream", false);
        boolean includeUsage = streamOption(root.get("stream_options"), stream, "include_usage");
        boolean continuousUsage = streamOption(root.get("stream_options"), stream, "continuous_usage_stats");
        MaxTokens maxTokens = maxTokens(root, kind);
        double temperature = number(root.get("temperature"), "temperature").orElse(1.0);
        require(Double.isFinite(temperature) && temperature >= 0 && temperature <= 2, ErrorCode.INVALID_VALUE,
                "temperature", "'temperature' must be between 0 and 2, got %s.", temperature);
        double topP = number(root.get("top_p"), "top_p").orElse(1.0);
        require(Double.isFinite(topP) && topP > 0 && topP <= 1, ErrorCode.INVALID_VALUE,
                "top_p", "'top_p' must be greater than 0 and at most 1, got %s.", topP);
        OptionalLong seed = integer(root.get("seed"), "seed");
        List<String> stop = stop(root.get("stop"));
        String user = string(root.get("user"), "user");
        String cacheSalt = cacheSalt(root.get("cache_salt"));
        int n = choices(root.get("n"));
        boolean ignoreEos = bool(root.get("ignore_eos"), "ignore_eos", false);
        Duration timeout = shorter(timeout(root.get("timeout")), headerTimeout);
        SamplingOptions sampling = new SamplingOptions(topK(root.get("top_k")),
                bounded(root.get("min_p"), "min_p", 0, 0, 1),
                repetitionPenalty(root.get("repetition_penalty")),
                bounded(root.get("presence_penalty"), "presence_penalty", 0, -2, 2),
                bounded(root.get("frequency_penalty"), "frequency_penalty", 0, -2, 2),
                logitBias(root.get("logit_bias")), stopTokenIds(root.get("stop_token_ids")),
                kind == Kind.CHAT ? chatLogprobs(root) : completionLogprobs(root.get("logprobs")));
        checkNeutralFields(root, kind);

        String promptParam = kind == Kind.CHAT ? "messages" : "prompt";
        boolean parseSpecial = parseSpecial(root);
        int[] promptTokens = kind == Kind.CHAT ? chatPrompt(root.get("messages"), parseSpecial)
                : completionPrompt(root.get("prompt"), parseSpecial);
        int limit = checkContext(promptTokens.length, maxTokens, promptParam,
                kind == Kind.COMPLETION ? COMPLETIONS_DEFAULT_MAX_TOKENS : Integer.MAX_VALUE);
        return new GenerationRequest(requestId, model, promptTokens, limit, temperature, topP, seed, stop,
                ignoreEos, stream, includeUsage, user, timeout, kind, sampling, n, continuousUsage, cacheSalt);
    }

    /** {@code cache_salt}: absent, or a non-empty string of at most {@value #MAX_CACHE_SALT_LENGTH} characters. */
    private @Nullable String cacheSalt(@Nullable JsonNode node) {
        String salt = string(node, "cache_salt");
        if (salt != null) {
            require(!salt.isEmpty() && salt.length() <= MAX_CACHE_SALT_LENGTH, ErrorCode.INVALID_VALUE, "cache_salt",
                    "'cache_salt' must be a non-empty string of at most %s characters.", MAX_CACHE_SALT_LENGTH);
        }
        return salt;
    }

    /** The longest {@code cache_salt}: a salt is an identifier (a tenant's), not content. */
    static final int MAX_CACHE_SALT_LENGTH = 256;

    /** Parses {@value #TIMEOUT_HEADER}: seconds, e.g. {@code 30} or {@code 2.5}; null when absent. */
    @Nullable Duration timeoutHeader(@Nullable String value) {
        if (value == null) {
            return null;
        }
        require(SECONDS.matcher(value.strip()).matches(), ErrorCode.INVALID_VALUE, TIMEOUT_HEADER,
                "Invalid %s header: expected a positive number of seconds such as 30 or 2.5.", TIMEOUT_HEADER);
        return seconds(new BigDecimal(value.strip()), TIMEOUT_HEADER);
    }

    // --- body ---------------------------------------------------------------------------------------------------

    private static JsonNode readObject(byte[] body) {
        String text = utf8(body);
        if (!text.isEmpty() && text.charAt(0) == '\uFEFF') {
            text = text.substring(1); // a UTF-8 BOM is legal noise, not content
        }
        require(!text.isBlank(), ErrorCode.INVALID_JSON, null, "The request body is empty; expected a JSON object.");
        JsonNode root;
        try {
            root = OpenAiJson.MAPPER.readTree(text);
        } catch (JacksonException e) {
            throw ApiException.of(ErrorCode.INVALID_JSON, null, "The request body is not valid JSON: %s%s",
                    truncate(e.getOriginalMessage(), 200), location(e));
        }
        require(root != null && root.isObject(), ErrorCode.INVALID_JSON, null,
                "The request body must be a JSON object, got %s.", root == null ? "nothing" : typeName(root));
        return root;
    }

    private static String utf8(byte[] body) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(body);
        try {
            return decoder.decode(in).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.of(ErrorCode.INVALID_ENCODING, null,
                    "The request body is not valid UTF-8: bad byte sequence at offset %d.", in.position());
        }
    }

    private static String location(JacksonException e) {
        TokenStreamLocation at = e.getLocation();
        return at == null || at.getLineNr() < 1 ? "" : " (line %d, column %d)".formatted(at.getLineNr(), at.getColumnNr());
    }

    private static void rejectUnknownFields(JsonNode root, Kind kind) {
        Set<String> own = kind == Kind.CHAT ? CHAT_FIELDS : COMPLETION_FIELDS;
        for (String name : root.propertyNames()) {
            if (!COMMON_FIELDS.contains(name) && !own.contains(name)) {
                Set<String> known = new TreeSet<>(COMMON_FIELDS); // sorted: the same suggestion on every run
                known.addAll(own);
                throw ApiException.of(ErrorCode.UNKNOWN_PARAMETER, name,
                        "Unrecognized request argument supplied: %s%s", truncate(name, 100), didYouMean(name, known));
            }
        }
    }

    /**
     * {@code "; did you mean 'max_tokens'?"} when {@code name} is a typo of a known field ({@link Suggestions}, the
     * style of every Ripcord tool), else {@code ""}. A name longer than any field could be a typo of is not
     * compared: the distance costs its length times the field's, and the name comes from the client.
     */
    static String didYouMean(String name, Collection<String> known) {
        return name.length() > MAX_SUGGESTED_LENGTH ? "" : Suggestions.didYouMean(name, known, "");
    }

    // --- fields -------------------------------------------------------------------------------------------------

    private String model(@Nullable JsonNode node) {
        String model = string(node, "model");
        require(model != null, ErrorCode.MISSING_REQUIRED_PARAMETER, "model", "Missing required parameter: 'model'.");
        if (!model.equals(codec.modelName())) {
            throw ApiException.of(ErrorCode.MODEL_NOT_FOUND, "model", "The model '%s' does not exist; this server serves '%s'.",
                    truncate(model, 100), codec.modelName());
        }
        return model;
    }

    /** A boolean of {@code stream_options} ({@code include_usage}, {@code continuous_usage_stats}). */
    private static boolean streamOption(@Nullable JsonNode options, boolean stream, String key) {
        if (!present(options)) {
            return false;
        }
        if (!options.isObject()) {
            throw wrongType("stream_options", "an object", options);
        }
        require(stream, ErrorCode.INVALID_VALUE, "stream_options",
                "'stream_options' is only allowed when 'stream' is true.");
        // other keys are ignored on purpose: clients send options of newer API versions
        return bool(options.get(key), "stream_options." + key, false);
    }

    /** {@code max_tokens} (or chat's {@code max_completion_tokens}), checked against the server's limit. */
    private MaxTokens maxTokens(JsonNode root, Kind kind) {
        JsonNode legacy = root.get("max_tokens");
        JsonNode modern = kind == Kind.CHAT ? root.get("max_completion_tokens") : null;
        String param = "max_tokens";
        JsonNode node = legacy;
        if (present(modern)) {
            require(!present(legacy) || legacy.equals(modern), ErrorCode.INVALID_VALUE, "max_completion_tokens",
                    "Set only one of 'max_tokens' and 'max_completion_tokens'.");
            param = "max_completion_tokens";
            node = modern;
        }
        if (!present(node)) {
            return new MaxTokens(null, param);
        }
        if (!node.isIntegralNumber()) {
            throw wrongType(param, "an integer", node);
        }
        int serverMax = codec.maxTokensLimit();
        require(node.canConvertToInt() && node.intValue() >= 1 && node.intValue() <= serverMax,
                ErrorCode.INVALID_VALUE, param, "'%s' must be between 1 and %d, got %s.", param, serverMax,
                truncate(node.toString(), MAX_ECHOED_VALUE));
        return new MaxTokens(node.intValue(), param);
    }

    private static List<String> stop(@Nullable JsonNode node) {
        if (!present(node)) {
            return List.of();
        }
        if (node.isString()) {
            return List.of(stopString(node, "stop"));
        }
        if (!node.isArray()) {
            throw wrongType("stop", "a string or an array of strings", node);
        }
        require(node.size() <= MAX_STOP_STRINGS, ErrorCode.INVALID_VALUE, "stop",
                "'stop' takes at most %d strings, got %d.", MAX_STOP_STRINGS, node.size());
        List<String> stops = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            stops.add(stopString(node.get(i), "stop[" + i + "]"));
        }
        return stops;
    }

    private static String stopString(JsonNode node, String param) {
        if (!node.isString()) {
            throw wrongType(param, "a string", node);
        }
        String stop = node.stringValue();
        require(!stop.isEmpty(), ErrorCode.INVALID_VALUE, param, "'%s' must not be an empty string.", param);
        requireWellFormed(stop, param);
        return stop;
    }

    /**
     * {@code n}, {@code 1..max-n}. Each choice is known to the workers by its own suffix of the request's internal ID
     * ({@link dev.ripcord.protocol.RequestIds#choiceId}), which fits whatever the client's ID.
     */
    private int choices(@Nullable JsonNode node) {
        OptionalLong n = integer(node, "n");
        if (n.isEmpty()) {
            return 1;
        }
        require(n.getAsLong() >= 1 && n.getAsLong() <= maxN, ErrorCode.INVALID_VALUE, "n",
                "'n' must be between 1 and %d, got %d.", maxN, n.getAsLong());
        return (int) n.getAsLong();
    }

    // --- sampling knobs (vLLM's names and ranges, OpenAI's where OpenAI has the field) ----------------------------

    /** {@code top_k}: -1 or 0 is off (vLLM's -1 means "all tokens"), else at least 1. */
    private static int topK(@Nullable JsonNode node) {
        OptionalLong k = integer(node, "top_k");
        if (k.isEmpty()) {
            return 0;
        }
        require(k.getAsLong() >= -1 && k.getAsLong() <= Integer.MAX_VALUE, ErrorCode.INVALID_VALUE, "top_k",
                "'top_k' must be -1 (off), 0 (off) or a positive integer, got %d.", k.getAsLong());
        return (int) Math.max(0, k.getAsLong());
    }

    private static double bounded(@Nullable JsonNode node, String param, double absent, double min, double max) {
        OptionalDouble value = number(node, param);
        if (value.isEmpty()) {
            return absent;
        }
        double v = value.getAsDouble();
        require(Double.isFinite(v) && v >= min && v <= max, ErrorCode.INVALID_VALUE, param,
                "'%s' must be between %s and %s, got %s.", param, plain(min), plain(max),
                truncate(node.toString(), MAX_ECHOED_VALUE));
        return v;
    }

    private static double repetitionPenalty(@Nullable JsonNode node) {
        OptionalDouble value = number(node, "repetition_penalty");
        if (value.isEmpty()) {
            return 1;
        }
        double v = value.getAsDouble();
        require(Double.isFinite(v) && v > 0 && v <= MAX_REPETITION_PENALTY, ErrorCode.INVALID_VALUE,
                "repetition_penalty", "'repetition_penalty' must be greater than 0 and at most %s, got %s.",
                plain(MAX_REPETITION_PENALTY), truncate(node.toString(), MAX_ECHOED_VALUE));
        return v;
    }

    /** {@code logit_bias}: token id (a JSON object key, as OpenAI has it) → -100..100. */
    private Map<Integer, Double> logitBias(@Nullable JsonNode node) {
        if (!present(node)) {
            return Map.of();
        }
        if (!node.isObject()) {
            throw wrongType("logit_bias", "an object", node);
        }
        require(node.size() <= MAX_LOGIT_BIAS_ENTRIES, ErrorCode.INVALID_VALUE, "logit_bias",
                "'logit_bias' takes at most %d entries, got %d.", MAX_LOGIT_BIAS_ENTRIES, node.size());
        Map<Integer, Double> bias = new HashMap<>();
        for (Map.Entry<String, JsonNode> entry : node.properties()) {
            String key = entry.getKey();
            String param = "logit_bias." + truncate(key, MAX_ECHOED_VALUE);
            int token = tokenId(key);
            require(token >= 0, ErrorCode.INVALID_VALUE, param,
                    "'logit_bias' keys must be token ids between 0 and %d, got '%s'.", codec.vocabularySize() - 1,
                    truncate(key, MAX_ECHOED_VALUE));
            JsonNode value = entry.getValue();
            if (!value.isNumber()) {
                throw wrongType(param, "a number", value);
            }
            require(Double.isFinite(value.doubleValue()) && value.doubleValue() >= -100 && value.doubleValue() <= 100,
                    ErrorCode.INVALID_VALUE, param, "'logit_bias' values must be between -100 and 100, got %s.",
                    truncate(value.toString(), MAX_ECHOED_VALUE));
            bias.put(token, value.doubleValue());
        }
        return bias;
    }

    /** A token id written as a JSON key: decimal digits only, within the vocabulary; else -1. */
    private int tokenId(String key) {
        if (key.isEmpty() || key.length() > 10 || !key.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return -1;
        }
        long id = Long.parseLong(key);
        return id < codec.vocabularySize() ? (int) id : -1;
    }

    private List<Integer> stopTokenIds(@Nullable JsonNode node) {
        if (!present(node)) {
            return List.of();
        }
        if (!node.isArray()) {
            throw wrongType("stop_token_ids", "an array of token ids", node);
        }
        require(node.size() <= MAX_STOP_TOKEN_IDS, ErrorCode.INVALID_VALUE, "stop_token_ids",
                "'stop_token_ids' takes at most %d token ids, got %d.", MAX_STOP_TOKEN_IDS, node.size());
        List<Integer> ids = new ArrayList<>(node.size());
        int vocabulary = codec.vocabularySize();
        for (int i = 0; i < node.size(); i++) {
            JsonNode id = node.get(i);
            String param = "stop_token_ids[" + i + "]";
            if (!id.isIntegralNumber()) {
                throw wrongType(param, "an integer token id", id);
            }
            require(id.canConvertToInt() && id.intValue() >= 0 && id.intValue() < vocabulary, ErrorCode.INVALID_VALUE,
                    param, "'%s' must be a token id between 0 and %d, got %s.", param, vocabulary - 1,
                    truncate(id.toString(), MAX_ECHOED_VALUE));
            ids.add(id.intValue());
        }
        return ids;
    }

    /** Completions: {@code logprobs} is how many top alternatives per token, 0..5; null is none. */
    private static int completionLogprobs(@Nullable JsonNode node) {
        if (!present(node)) {
            return -1;
        }
        if (!node.isIntegralNumber()) {
            throw wrongType("logprobs", "an integer", node);
        }
        require(node.canConvertToInt() && node.intValue() >= 0 && node.intValue() <= MAX_COMPLETION_LOGPROBS,
                ErrorCode.INVALID_VALUE, "logprobs", "'logprobs' must be between 0 and %d, got %s.",
                MAX_COMPLETION_LOGPROBS, truncate(node.toString(), MAX_ECHOED_VALUE));
        return node.intValue();
    }

    /** Chat: boolean {@code logprobs}, and {@code top_logprobs} 0..20, which needs {@code logprobs: true}. */
    private static int chatLogprobs(JsonNode root) {
        boolean logprobs = bool(root.get("logprobs"), "logprobs", false);
        OptionalLong top = integer(root.get("top_logprobs"), "top_logprobs");
        if (top.isEmpty()) {
            return logprobs ? 0 : -1;
        }
        require(top.getAsLong() >= 0 && top.getAsLong() <= MAX_CHAT_TOP_LOGPROBS, ErrorCode.INVALID_VALUE,
                "top_logprobs", "'top_logprobs' must be between 0 and %d, got %d.", MAX_CHAT_TOP_LOGPROBS,
                top.getAsLong());
        require(logprobs, ErrorCode.INVALID_VALUE, "top_logprobs",
                "'top_logprobs' needs 'logprobs' set to true.");
        return (int) top.getAsLong();
    }

    private static String plain(double value) {
        return BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }

    private @Nullable Duration timeout(@Nullable JsonNode node) {
        if (!present(node)) {
            return null;
        }
        if (!node.isNumber()) {
            throw wrongType("timeout", "a number of seconds", node);
        }
        require(!node.isFloatingPointNumber() || Double.isFinite(node.doubleValue()), ErrorCode.INVALID_VALUE,
                "timeout", "'timeout' must be a finite number of seconds.");
        return seconds(node.decimalValue(), "timeout");
    }

    private Duration seconds(BigDecimal seconds, String param) {
        BigDecimal max = BigDecimal.valueOf(maxTimeout.toMillis()).movePointLeft(3);
        require(seconds.signum() > 0 && seconds.compareTo(max) <= 0, ErrorCode.INVALID_VALUE, param,
                "'%s' must be more than 0 and at most %s seconds, got %s.", param, max.stripTrailingZeros().toPlainString(),
                truncate(seconds.toString(), MAX_ECHOED_VALUE));
        BigInteger[] split = seconds.movePointRight(9).setScale(0, RoundingMode.CEILING).toBigIntegerExact()
                .divideAndRemainder(NANOS_PER_SECOND);
        return Duration.ofSeconds(split[0].longValueExact(), split[1].longValue());
    }

    private static @Nullable Duration shorter(@Nullable Duration a, @Nullable Duration b) {
        if (a == null) {
            return b;
        }
        return b == null || a.compareTo(b) <= 0 ? a : b;
    }

    /** The fields a client may send as long as they ask for nothing this server does not do. */
    private static void checkNeutralFields(JsonNode root, Kind kind) {
        if (kind == Kind.COMPLETION) {
            require(!bool(root.get("echo"), "echo", false), ErrorCode.UNSUPPORTED_VALUE, "echo",
                    "'echo' is not supported; omit it or send false.");
            JsonNode suffix = root.get("suffix");
            require(!present(suffix), ErrorCode.UNSUPPORTED_VALUE, "suffix",
                    "'suffix' is not supported; omit it or send null.");
            OptionalLong bestOf = integer(root.get("best_of"), "best_of");
            require(bestOf.isEmpty() || bestOf.getAsLong() == 1, ErrorCode.UNSUPPORTED_VALUE, "best_of",
                    "Only best_of=1 is supported.");
        } else {
            JsonNode format = root.get("response_format");
            if (present(format)) {
                if (!format.isObject()) {
                    throw wrongType("response_format", "an object", format);
                }
                String type = string(format.get("type"), "response_format.type");
                require(type != null, ErrorCode.MISSING_REQUIRED_PARAMETER, "response_format.type",
                        "Missing required parameter: 'response_format.type'.");
                require(type.equals("text"), ErrorCode.UNSUPPORTED_VALUE, "response_format.type",
                        "Only response_format {\"type\": \"text\"} is supported.");
            }
            bool(root.get("parallel_tool_calls"), "parallel_tool_calls", false); // type-checked, then ignored
            bool(root.get("store"), "store", false);
            JsonNode metadata = root.get("metadata");
            if (present(metadata) && !metadata.isObject()) {
                throw wrongType("metadata", "an object", metadata);
            }
        }
    }

    // --- prompt -------------------------------------------------------------------------------------------------

    /**
     * {@code parse_special}: whether special-token text the client wrote ({@code <|im_start|>} in a message or a
     * prompt) becomes those special tokens. Off by default: client text is text, so a message cannot open a turn of
     * another role; the special tokens of a chat prompt are those its template writes.
     */
    static boolean parseSpecial(JsonNode root) {
        return bool(root.get("parse_special"), "parse_special", false);
    }

    private int[] completionPrompt(@Nullable JsonNode node, boolean parseSpecial) {
        require(present(node), ErrorCode.MISSING_REQUIRED_PARAMETER, "prompt", "Missing required parameter: 'prompt'.");
        if (node.isString()) {
            return encode(node.stringValue(), "prompt", parseSpecial);
        }
        if (!node.isArray()) {
            throw wrongType("prompt", "a string, an array of token ids or an array of one string", node);
        }
        require(!node.isEmpty(), ErrorCode.INVALID_VALUE, "prompt", "'prompt' must not be empty.");
        JsonNode first = node.get(0);
        if (first.isString() || first.isArray()) {
            require(node.size() == 1 && first.isString(), ErrorCode.UNSUPPORTED_VALUE, "prompt",
                    "Batched prompts are not supported; send one prompt per request.");
            return encode(first.stringValue(), "prompt[0]", parseSpecial);
        }
        int vocabulary = codec.vocabularySize();
        int[] tokens = new int[node.size()];
        for (int i = 0; i < tokens.length; i++) {
            JsonNode token = node.get(i);
            if (!token.isIntegralNumber()) {
                throw wrongType("prompt[" + i + "]", "an integer token id", token);
            }
            require(token.canConvertToInt() && token.intValue() >= 0 && token.intValue() < vocabulary,
                    ErrorCode.INVALID_VALUE, "prompt[" + i + "]", "'prompt[%d]' must be a token id between 0 and %d, got %s.",
                    i, vocabulary - 1, truncate(token.toString(), MAX_ECHOED_VALUE));
            tokens[i] = token.intValue();
        }
        return tokens;
    }

    private int[] chatPrompt(@Nullable JsonNode node, boolean parseSpecial) {
        require(present(node), ErrorCode.MISSING_REQUIRED_PARAMETER, "messages",
                "Missing required parameter: 'messages'.");
        if (!node.isArray()) {
            throw wrongType("messages", "an array", node);
        }
        require(!node.isEmpty(), ErrorCode.INVALID_VALUE, "messages", "'messages' must contain at least one message.");
        List<ChatTemplate.Message> messages = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            messages.add(message(node.get(i), "messages[" + i + "]"));
        }
        JinjaChatTemplate template = codec.chatTemplate();
        if (template == null) {
            return encode(ChatTemplate.render(messages), "messages", parseSpecial);
        }
        if (!parseSpecial) {
            // The rendered prompt is encoded with special-token parsing, for the template's own markers; the
            // content is marked so that the special-token text a client wrote in it stays text.
            messages = messages.stream().map(m -> new ChatTemplate.Message(m.role(), codec.asPlainText(m.content())))
                    .toList();
        }
        String prompt;
        try {
            prompt = ChatTemplate.render(messages, template);
        } catch (ChatTemplateException e) {
            throw switch (e.kind()) {
                // The model's template refuses this conversation (raise_exception): the client's to fix.
                case RAISED -> ApiException.of(ErrorCode.INVALID_VALUE, "messages", "The model's chat template "
                        + "rejected 'messages': %s", truncate(String.valueOf(e.getMessage()), 200));
                // Limits no sane template reaches on a conversation that fits the body cap, so the conversation is
                // the likelier cause; the log line says which limit, for an operator whose template is to blame.
                case LIMIT_EXCEEDED -> ApiException.of(ErrorCode.CHAT_TEMPLATE_LIMIT_EXCEEDED, "messages",
                        "Rendering 'messages' with the model's chat template went past a render limit (%s).",
                        truncate(String.valueOf(e.getMessage()), 200));
                // the template failed on its own, or tried to leave the sandbox: a server-side problem (500)
                case TEMPLATE_ERROR, FORBIDDEN -> e;
            };
        }
        int[] tokens = codec.encodeTemplated(prompt);
        require(tokens.length > 0, ErrorCode.INVALID_VALUE, "messages", "'messages' must not be empty.");
        return tokens;
    }

    private static ChatTemplate.Message message(JsonNode node, String param) {
        if (!node.isObject()) {
            throw wrongType(param, "an object", node);
        }
        for (String name : node.propertyNames()) {
            if (!MESSAGE_FIELDS.contains(name)) {
                throw ApiException.of(ErrorCode.UNKNOWN_PARAMETER, param + "." + name,
                        "Unrecognized argument in '%s': %s%s", param, truncate(name, 100),
                        didYouMean(name, new TreeSet<>(MESSAGE_FIELDS)));
            }
        }
        String role = string(node.get("role"), param + ".role");
        require(role != null, ErrorCode.MISSING_REQUIRED_PARAMETER, param + ".role",
                "Missing required parameter: '%s.role'.", param);
        require(!UNSUPPORTED_ROLES.contains(role), ErrorCode.UNSUPPORTED_VALUE, param + ".role",
                "Role '%s' is not supported; use system, developer, user or assistant.", role);
        require(CHAT_ROLES.contains(role), ErrorCode.INVALID_VALUE, param + ".role",
                "Invalid value for '%s.role': '%s'. Supported roles: system, developer, user, assistant.", param,
                truncate(role, MAX_ECHOED_VALUE));
        string(node.get("name"), param + ".name"); // type-checked, then ignored: the template has no names
        String content = content(node.get("content"), param + ".content");
        // developer is OpenAI's newer name for system: templates (and the fallback) know system
        return new ChatTemplate.Message(role.equals("developer") ? "system" : role, content);
    }

    private static String content(@Nullable JsonNode node, String param) {
        require(present(node), ErrorCode.MISSING_REQUIRED_PARAMETER, param, "Missing required parameter: '%s'.", param);
        if (node.isString()) {
            requireWellFormed(node.stringValue(), param);
            return node.stringValue();
        }
        if (!node.isArray()) {
            throw wrongType(param, "a string or an array of text parts", node);
        }
        List<String> texts = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            JsonNode part = node.get(i);
            String partParam = param + "[" + i + "]";
            if (!part.isObject()) {
                throw wrongType(partParam, "an object", part);
            }
            for (Map.Entry<String, JsonNode> field : part.properties()) {
                require(field.getKey().equals("type") || field.getKey().equals("text"), ErrorCode.UNKNOWN_PARAMETER,
                        partParam + "." + field.getKey(), "Unrecognized argument in '%s': %s", partParam,
                        truncate(field.getKey(), 100));
            }
            String type = string(part.get("type"), partParam + ".type");
            require(type != null, ErrorCode.MISSING_REQUIRED_PARAMETER, partParam + ".type",
                    "Missing required parameter: '%s.type'.", partParam);
            require(type.equals("text"), ErrorCode.UNSUPPORTED_VALUE, partParam + ".type",
                    "Content part type '%s' is not supported; only 'text' parts are.", truncate(type, MAX_ECHOED_VALUE));
            String text = string(part.get("text"), partParam + ".text");
            require(text != null, ErrorCode.MISSING_REQUIRED_PARAMETER, partParam + ".text",
                    "Missing required parameter: '%s.text'.", partParam);
            requireWellFormed(text, partParam + ".text");
            texts.add(text);
        }
        return String.join("\n", texts);
    }

    private int[] encode(String text, String param, boolean parseSpecial) {
        requireWellFormed(text, param);
        int[] tokens = codec.encode(text, parseSpecial);
        require(tokens.length > 0, ErrorCode.INVALID_VALUE, param, "'%s' must not be empty.", param);
        return tokens;
    }

    /**
     * Returns the effective {@code max_tokens} once the prompt's length is known; without one it is
     * {@code defaultMax} (completions: OpenAI's 16), capped by the server's limit and the room left.
     */
    private int checkContext(int promptTokens, MaxTokens maxTokens, String promptParam, int defaultMax) {
        int context = codec.contextLength();
        require(promptTokens < context, ErrorCode.CONTEXT_LENGTH_EXCEEDED, promptParam,
                "This model's maximum context length is %d tokens, but the prompt is %d tokens, which leaves no room "
                        + "for a completion. Please shorten the prompt.", context, promptTokens);
        int room = context - promptTokens;
        if (maxTokens.value() == null) {
            return Math.min(defaultMax, Math.min(codec.maxTokensLimit(), room));
        }
        int requested = maxTokens.value();
        require(requested <= room, ErrorCode.CONTEXT_LENGTH_EXCEEDED, maxTokens.param(),
                "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the "
                        + "prompt, %d for the completion). Please reduce the prompt or '%s'.",
                context, promptTokens + requested, promptTokens, requested, maxTokens.param());
        return requested;
    }

    private record MaxTokens(@Nullable Integer value, String param) {
    }

    // --- typed readers: null or absent means "not given" ----------------------------------------------------------

    private static boolean present(@Nullable JsonNode node) {
        return node != null && !node.isNull();
    }

    private static @Nullable String string(@Nullable JsonNode node, String param) {
        if (!present(node)) {
            return null;
        }
        if (!node.isString()) {
            throw wrongType(param, "a string", node);
        }
        return node.stringValue();
    }

    private static boolean bool(@Nullable JsonNode node, String param, boolean absent) {
        if (!present(node)) {
            return absent;
        }
        if (!node.isBoolean()) {
            throw wrongType(param, "a boolean", node);
        }
        return node.booleanValue();
    }

    private static OptionalLong integer(@Nullable JsonNode node, String param) {
        if (!present(node)) {
            return OptionalLong.empty();
        }
        if (!node.isIntegralNumber()) {
            throw wrongType(param, "an integer", node);
        }
        require(node.canConvertToLong(), ErrorCode.INVALID_VALUE, param,
                "'%s' must fit in a signed 64-bit integer, got %s.", param, truncate(node.toString(), MAX_ECHOED_VALUE));
        return OptionalLong.of(node.longValue());
    }

    private static OptionalDouble number(@Nullable JsonNode node, String param) {
        if (!present(node)) {
            return OptionalDouble.empty();
        }
        if (!node.isNumber()) {
            throw wrongType(param, "a number", node);
        }
        return OptionalDouble.of(node.doubleValue());
    }

    // --- preconditions --------------------------------------------------------------------------------------------

    private static void require(boolean condition, ErrorCode code, @Nullable String param, String template,
            Object... args) {
        if (!condition) {
            throw ApiException.of(code, param, template, args);
        }
    }

    private static ApiException wrongType(String param, String expected, JsonNode actual) {
        return ApiException.of(ErrorCode.INVALID_TYPE, param, "Invalid type for '%s': expected %s, but got %s instead.",
                param, expected, typeName(actual));
    }

    private static String typeName(JsonNode node) {
        if (node.isString()) {
            return "a string";
        }
        if (node.isIntegralNumber()) {
            return "an integer";
        }
        if (node.isNumber()) {
            return "a decimal";
        }
        if (node.isBoolean()) {
            return "a boolean";
        }
        if (node.isArray()) {
            return "an array";
        }
        if (node.isObject()) {
            return "an object";
        }
        return "null";
    }

    /** Jackson turns {@code "\ud800"} escapes into lone surrogates; no tokenizer can encode those. */
    private static void requireWellFormed(String text, String param) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw ApiException.of(ErrorCode.INVALID_ENCODING, param,
                        "'%s' contains an unpaired UTF-16 surrogate at index %d.", param, i);
            }
        }
    }

    private static String truncate(@Nullable String value, int max) {
        if (value == null) {
            return "";
        }
        return value.length() <= max ? value : value.substring(0, max) + "...";
    }

    // --- for /tokenize and /detokenize (RootRoutes): the same rules as the completion endpoints -----------------

    /** A body read exactly as the completion endpoints read theirs: UTF-8, one JSON object. */
    static JsonNode readJsonObject(byte[] body) {
        return readObject(body);
    }

    /** An optional {@code model}: when given it must be the served model (404 {@code model_not_found}). */
    void checkOptionalModel(@Nullable JsonNode node) {
        if (present(node)) {
            model(node);
        }
    }

    /** The prompt's tokens exactly as {@code kind}'s endpoint would send them ({@code prompt} or {@code messages}). */
    int[] promptTokens(Kind kind, @Nullable JsonNode node, boolean parseSpecial) {
        return kind == Kind.CHAT ? chatPrompt(node, parseSpecial) : completionPrompt(node, parseSpecial);
    }

    /** An optional boolean field, type-checked. */
    static boolean booleanField(@Nullable JsonNode node, String param, boolean absent) {
        return bool(node, param, absent);
    }

    /** A field of the wrong JSON type: 400 {@code invalid_type}, naming the field and what it must be. */
    static ApiException wrongTypeOf(String param, String expected, JsonNode actual) {
        return wrongType(param, expected, actual);
    }
}
