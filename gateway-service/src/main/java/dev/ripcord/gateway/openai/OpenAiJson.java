package dev.ripcord.gateway.openai;

import java.nio.charset.StandardCharsets;

import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The JSON this package reads and writes. It keeps its own mapper instead of the application's: the OpenAI wire
 * format must not change when someone tunes the application's Jackson settings, and requests are read strictly
 * (duplicate keys and trailing content are errors, not silently resolved).
 */
final class OpenAiJson {

    static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    /** The terminator of every stream. */
    static final byte[] SSE_DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    /** Whether an SSE frame ends the stream: its bytes end with {@link #SSE_DONE} (alone, or after an event). */
    static boolean endsWithDone(byte[] frame) {
        int from = frame.length - SSE_DONE.length;
        return from >= 0 && java.util.Arrays.equals(frame, from, frame.length, SSE_DONE, 0, SSE_DONE.length);
    }

    private static final byte[] SSE_PREFIX = "data: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SSE_SUFFIX = "\n\n".getBytes(StandardCharsets.US_ASCII);

    private OpenAiJson() {
    }

    static byte[] bytes(JsonNode node) {
        return MAPPER.writeValueAsBytes(node);
    }

    /** One server-sent event, {@code data: {json}\n\n}, as OpenAI frames it. */
    static byte[] sseEvent(JsonNode node) {
        byte[] json = bytes(node);
        byte[] event = new byte[SSE_PREFIX.length + json.length + SSE_SUFFIX.length];
        System.arraycopy(SSE_PREFIX, 0, event, 0, SSE_PREFIX.length);
        System.arraycopy(json, 0, event, SSE_PREFIX.length, json.length);
        System.arraycopy(SSE_SUFFIX, 0, event, SSE_PREFIX.length + json.length, SSE_SUFFIX.length);
        return event;
    }

    /** {@code {"error":{"message":..., "type":..., "param":..., "code":...}}}. */
    static ObjectNode errorBody(ApiException error) {
        ObjectNode body = MAPPER.createObjectNode();
        ObjectNode inner = body.putObject("error");
        inner.put("message", error.message());
        inner.put("type", error.errorCode().type());
        if (error.param() == null) {
            inner.putNull("param");
        } else {
            inner.put("param", error.param());
        }
        inner.put("code", error.errorCode().code());
        return body;
    }
}
