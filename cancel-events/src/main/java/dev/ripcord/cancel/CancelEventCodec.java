package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelReason;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;

import dev.ripcord.cancel.InvalidCancelEventException.Problem;
import dev.ripcord.protocol.RequestIds;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The wire form of a {@link CancelEvent}: one UTF-8 JSON object,
 * <pre>{"schemaVersion":1,"requestId":"req-…","reason":"CLIENT_DISCONNECT",
 *  "origin":{"service":"gateway","instance":"3f2a…"},"timestamp":"2026-11-29T21:00:00.123Z"}</pre>
 *
 * <p>Decoding is tolerant where evolution needs it and strict where a mistake would be silent: unknown fields are
 * ignored (a newer producer may add some), while a missing required field, an unknown {@code reason}, an invalid
 * request ID or any {@code schemaVersion} other than {@value CancelEvent#CURRENT_SCHEMA_VERSION} is rejected with an
 * {@link InvalidCancelEventException} naming the {@link Problem}. The codec walks a tree instead of data-binding so
 * that every rejection says exactly which field was wrong. Thread-safe.
 */
public final class CancelEventCodec {

    private static final JsonMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private CancelEventCodec() {
    }

    public static byte[] encode(CancelEvent event) {
        ObjectNode node = JSON.createObjectNode();
        node.put("schemaVersion", event.schemaVersion());
        node.put("requestId", event.requestId());
        node.put("reason", event.reason().name());
        ObjectNode origin = node.putObject("origin");
        origin.put("service", event.origin().service());
        origin.put("instance", event.origin().instance());
        node.put("timestamp", event.timestamp().toString());
        return JSON.writeValueAsBytes(node);
    }

    public static CancelEvent decode(byte[] bytes) {
        if (bytes == null || bytes.length == 0) {
            throw new InvalidCancelEventException(Problem.NOT_JSON, "empty record value");
        }
        JsonNode root;
        try {
            // Always UTF-8 (RFC 8259 for JSON between systems). Given bytes, Jackson would guess the encoding, and
            // garbage starting with a NUL byte would be read, and reported, as UTF-16.
            root = JSON.readTree(new String(bytes, StandardCharsets.UTF_8));
        } catch (JacksonException e) {
            throw new InvalidCancelEventException(Problem.NOT_JSON, "not JSON: " + abbreviate(e.getOriginalMessage()));
        }
        if (root == null || !root.isObject()) {
            throw new InvalidCancelEventException(Problem.NOT_JSON, "not a JSON object");
        }
        int version = requireInt(root, "schemaVersion");
        if (version != CancelEvent.CURRENT_SCHEMA_VERSION) {
            throw new InvalidCancelEventException(Problem.UNSUPPORTED_SCHEMA_VERSION,
                    "schemaVersion %d is not supported; this build reads %d"
                            .formatted(version, CancelEvent.CURRENT_SCHEMA_VERSION));
        }
        String requestId = requireString(root, "requestId");
        if (!RequestIds.isValid(requestId)) {
            throw new InvalidCancelEventException(Problem.INVALID_REQUEST_ID, RequestIds.problemWith(requestId));
        }
        CancelReason reason = reason(requireString(root, "reason"));
        JsonNode originNode = root.get("origin");
        if (originNode == null || originNode.isNull()) {
            throw missing("origin");
        }
        if (!originNode.isObject()) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD, "field 'origin' must be an object");
        }
        String service = requireString(originNode, "service");
        String instance = requireString(originNode, "instance");
        if (service.isBlank() || instance.isBlank()) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD, "origin service and instance must not be blank");
        }
        Instant timestamp = timestamp(requireString(root, "timestamp"));
        return new CancelEvent(requestId, reason, new Origin(service, instance), timestamp, version);
    }

    private static String abbreviate(String message) {
        String oneLine = String.valueOf(message).replaceAll("\\s+", " ");
        return oneLine.length() <= 160 ? oneLine : oneLine.substring(0, 160) + "...";
    }

    private static CancelReason reason(String value) {
        try {
            return CancelReason.valueOf(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD, "unknown reason '%s'".formatted(value));
        }
    }

    private static Instant timestamp(String value) {
        try {
            return Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD,
                    "field 'timestamp' is not an ISO-8601 instant: '%s'".formatted(value));
        }
    }

    private static int requireInt(JsonNode parent, String field) {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull()) {
            throw missing(field);
        }
        if (!node.isIntegralNumber() || !node.canConvertToInt()) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD, "field '%s' must be an integer".formatted(field));
        }
        return node.intValue();
    }

    private static String requireString(JsonNode parent, String field) {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull()) {
            throw missing(field);
        }
        if (!node.isString()) {
            throw new InvalidCancelEventException(Problem.INVALID_FIELD, "field '%s' must be a string".formatted(field));
        }
        return node.stringValue();
    }

    private static InvalidCancelEventException missing(String field) {
        return new InvalidCancelEventException(Problem.MISSING_FIELD, "missing required field '%s'".formatted(field));
    }
}
