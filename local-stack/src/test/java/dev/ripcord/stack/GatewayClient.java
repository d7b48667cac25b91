package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A plain HTTP client of the gateway's OpenAI API that records what a test needs to compare: the text (all
 * pieces joined), the finish reason, usage, and every {@code id} the answer carried. Streams are read as SSE,
 * event by event, as they arrive.
 *
 * <p>Deliberately not an SDK: it shows the wire format as it is (an SDK would hide a missing field or an extra
 * event). {@code OpenAiSdkIT} covers what an SDK sees.
 */
public final class GatewayClient {

    public static final String COMPLETIONS = "/v1/completions";
    public static final String CHAT_COMPLETIONS = "/v1/chat/completions";
    static final ObjectMapper JSON = JsonMapper.builder().build();

    private final URI base;
    private final String apiKey;
    private final HttpClient http;

    /** A client of the gateway at {@code base} sending the API key of the stack there ({@link TestCredentials}). */
    public GatewayClient(URI base) {
        this(base, TestCredentials.apiKey(base));
    }

    /** A client sending {@code apiKey} as {@code Authorization: Bearer}; none if null. */
    public GatewayClient(URI base, String apiKey) {
        this.base = base;
        this.apiKey = apiKey;
        // HTTP/1.1 as OpenAI SDKs speak it; java.net.http would otherwise try an h2c upgrade first.
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
    }

    public URI base() {
        return base;
    }

    /** The API key this client sends, or null. */
    public String apiKey() {
        return apiKey;
    }

    /** A {@code /v1/completions} body: greedy, {@code ignore_eos}, no stream; callers adjust it. */
    public static ObjectNode completionRequest(String model, String prompt, int maxTokens) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model);
        body.put("prompt", prompt);
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("ignore_eos", true);
        return body;
    }

    /** A {@code /v1/chat/completions} body with one user message: greedy, {@code ignore_eos}, no stream. */
    public static ObjectNode chatRequest(String model, String userMessage, int maxTokens) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model);
        body.putArray("messages").addObject().put("role", "user").put("content", userMessage);
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("ignore_eos", true);
        return body;
    }

    /**
     * Sends {@code body} to {@code path} with {@code X-Request-Id: requestId} (none if null) and reads the whole
     * answer: one JSON body, or the SSE stream to {@code [DONE]} if the body says {@code "stream": true}.
     *
     * @throws AssertionError if the status is not 200 (with the body in the message)
     */
    public Answer send(String path, ObjectNode body, String requestId) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
        TestCredentials.withApiKey(request, apiKey);
        if (requestId != null) {
            request.header("X-Request-Id", requestId);
        }
        boolean chat = path.equals(CHAT_COMPLETIONS);
        long start = System.nanoTime();
        try {
            HttpResponse<Stream<String>> response = http.send(request.build(), HttpResponse.BodyHandlers.ofLines());
            String headerId = response.headers().firstValue("X-Request-Id").orElse(null);
            try (Stream<String> lines = response.body()) {
                if (response.statusCode() != 200) {
                    throw new AssertionError("%s answered %d: %s".formatted(path, response.statusCode(),
                            String.join("\n", lines.toList())));
                }
                String contentType = response.headers().firstValue("Content-Type").orElse("");
                return contentType.startsWith("text/event-stream")
                        ? readStream(lines.iterator(), chat, headerId, start)
                        : readBody(String.join("\n", lines.toList()), chat, headerId, start);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("POST " + path + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Sends {@code body} like {@link #send} and returns what came back as JSON, unparsed into an {@link Answer}: the
     * body, or each SSE event before {@code [DONE]} in order (for the fields {@link Answer} does not keep: several
     * choices, logprobs, per-chunk usage).
     *
     * @throws AssertionError if the status is not 200, or a stream does not end with {@code [DONE]}
     */
    public List<JsonNode> sendForJson(String path, ObjectNode body, String requestId) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
        TestCredentials.withApiKey(request, apiKey);
        if (requestId != null) {
            request.header("X-Request-Id", requestId);
        }
        try {
            HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new AssertionError("%s answered %d: %s".formatted(path, response.statusCode(), response.body()));
            }
            if (!response.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
                return List.of(JSON.readTree(response.body()));
            }
            List<JsonNode> events = new ArrayList<>();
            boolean done = false;
            for (String line : response.body().split("\n")) {
                if (line.isEmpty()) {
                    continue;
                }
                if (done || !line.startsWith("data: ")) {
                    throw new AssertionError("unexpected SSE line: " + line);
                }
                String data = line.substring("data: ".length());
                if (data.equals("[DONE]")) {
                    done = true;
                } else {
                    events.add(JSON.readTree(data));
                }
            }
            if (!done) {
                throw new AssertionError("stream ended without [DONE]");
            }
            return events;
        } catch (IOException e) {
            throw new UncheckedIOException("POST " + path + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static Answer readBody(String json, boolean chat, String headerId, long start) {
        JsonNode body = JSON.readTree(json);
        JsonNode choice = body.path("choices").path(0);
        String text = chat ? choice.path("message").path("content").asString() : choice.path("text").asString();
        JsonNode usage = body.path("usage");
        long end = System.nanoTime();
        return new Answer(headerId, Set.of(body.path("id").asString()), text, choice.path("finish_reason").asString(),
                usage.path("prompt_tokens").asInt(-1), usage.path("completion_tokens").asInt(-1), 1, false, null,
                end - start, end - start);
    }

    private static Answer readStream(Iterator<String> lines, boolean chat, String headerId, long start) {
        StringBuilder text = new StringBuilder();
        Set<String> ids = new LinkedHashSet<>();
        List<String> finishReasons = new ArrayList<>();
        int promptTokens = -1;
        int completionTokens = -1;
        int events = 0;
        boolean done = false;
        String error = null;
        long firstText = -1;
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.isEmpty()) {
                continue;
            }
            if (!line.startsWith("data: ")) {
                throw new AssertionError("not an SSE data line: " + line);
            }
            String data = line.substring("data: ".length());
            if (done) {
                throw new AssertionError("event after [DONE]: " + data);
            }
            if (data.equals("[DONE]")) {
                done = true;
                continue;
            }
            events++;
            JsonNode event = JSON.readTree(data);
            if (event.has("error")) {
                error = event.get("error").toString();
                continue;
            }
            ids.add(event.path("id").asString());
            JsonNode choice = event.path("choices").path(0);
            if (!choice.isMissingNode()) {
                String piece = chat ? choice.path("delta").path("content").asString("")
                        : choice.path("text").asString("");
                if (!piece.isEmpty() && firstText < 0) {
                    firstText = System.nanoTime();
                }
                text.append(piece);
                JsonNode finish = choice.path("finish_reason");
                if (!finish.isNull() && !finish.isMissingNode()) {
                    finishReasons.add(finish.asString());
                }
            }
            JsonNode usage = event.path("usage");
            if (usage.isObject()) {
                promptTokens = usage.path("prompt_tokens").asInt(-1);
                completionTokens = usage.path("completion_tokens").asInt(-1);
            }
        }
        if (finishReasons.size() > 1) {
            throw new AssertionError("more than one finish_reason in one stream: " + finishReasons);
        }
        long end = System.nanoTime();
        return new Answer(headerId, ids, text.toString(), finishReasons.isEmpty() ? null : finishReasons.getFirst(),
                promptTokens, completionTokens, events, done, error, firstText < 0 ? -1 : firstText - start,
                end - start);
    }

    /**
     * What the gateway answered.
     *
     * @param headerRequestId  the {@code X-Request-Id} response header
     * @param ids              every distinct {@code id} of the body or of the stream's chunks
     * @param text             the completion text (all chunks joined)
     * @param finishReason     the finish reason (a stream must carry exactly one)
     * @param promptTokens     {@code usage.prompt_tokens}, -1 if absent
     * @param completionTokens {@code usage.completion_tokens}, -1 if absent
     * @param events           SSE data events before {@code [DONE]} (1 for a plain body)
     * @param sawDone          whether a stream ended with {@code [DONE]}
     * @param streamError      the {@code error} object of an error event, or null
     * @param firstTextNanos   request sent to first non-empty text (the whole exchange for a plain body)
     * @param totalNanos       request sent to end of answer
     */
    public record Answer(String headerRequestId, Set<String> ids, String text, String finishReason, int promptTokens,
                         int completionTokens, int events, boolean sawDone, String streamError, long firstTextNanos,
                         long totalNanos) {
    }
}
