package dev.ripcord.lifecycle;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The wire form of a {@link LifecycleEvent}: one UTF-8 JSON object, absent fields omitted,
 * <pre>{"schemaVersion":1,"requestId":"req-…","service":"prefill","instance":"3f2a…","seq":17,
 *  "timestamp":"2026-11-29T21:00:00.123Z","type":"CHUNK_DONE","chunk":2,"tokens":64}</pre>
 *
 * <p>Like {@code CancelEventCodec}: unknown fields are ignored (a newer producer may add some); a missing required
 * field, an unknown {@code type} or {@code outcome}, or another {@code schemaVersion} is rejected with an
 * {@link InvalidLifecycleEventException} saying what was wrong, so that a reader can report the record and skip it.
 * An unknown cancel reason or source reads as {@code UNKNOWN} (they are informational here). Thread-safe.
 */
public final class LifecycleEventCodec {

    private static final JsonMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private LifecycleEventCodec() {
    }

    public static byte[] encode(LifecycleEvent e) {
        return JSON.writeValueAsBytes(toJson(e));
    }

    /** The event as a JSON tree (also what {@code ripcord audit --save} writes, one per line). */
    public static ObjectNode toJson(LifecycleEvent e) {
        ObjectNode node = JSON.createObjectNode();
        node.put("schemaVersion", LifecycleEvent.SCHEMA_VERSION);
        put(node, "requestId", e.requestId());
        put(node, "service", e.service());
        put(node, "instance", e.instance());
        node.put("seq", e.seq());
        put(node, "incarnation", e.incarnation());
        put(node, "timestamp", e.timestamp());
        node.put("type", e.type().name());
        put(node, "outcome", e.outcome());
        put(node, "reason", e.reason());
        put(node, "source", e.source());
        if (e.chunk() != null) {
            node.put("chunk", e.chunk());
        }
        if (e.layer() != null) {
            node.put("layer", e.layer());
        }
        if (e.tokens() != null) {
            node.put("tokens", e.tokens());
        }
        if (e.step() != null) {
            node.put("step", e.step());
        }
        if (e.bytes() != null) {
            node.put("bytes", e.bytes());
        }
        if (e.pages() != null) {
            node.put("pages", e.pages());
        }
        put(node, "prefillInstance", e.prefillInstance());
        put(node, "decodeInstance", e.decodeInstance());
        if (e.dropped() != null) {
            node.put("dropped", e.dropped());
            node.put("droppedFromSeq", e.droppedFromSeq());
            node.put("droppedToSeq", e.droppedToSeq());
        }
        put(node, "detail", e.detail());
        return node;
    }

    private static void put(ObjectNode node, String field, Object value) {
        if (value != null) {
            node.put(field, value instanceof Enum<?> en ? en.name() : value.toString());
        }
    }

    public static LifecycleEvent decode(byte[] bytes) {
        if (bytes == null || bytes.length == 0) {
            throw new InvalidLifecycleEventException("empty record value");
        }
        return decode(new String(bytes, StandardCharsets.UTF_8));
    }

    public static LifecycleEvent decode(String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JacksonException e) {
            throw new InvalidLifecycleEventException("not JSON: " + abbreviate(e.getOriginalMessage()));
        }
        if (root == null || !root.isObject()) {
            throw new InvalidLifecycleEventException("not a JSON object");
        }
        return fromJson(root);
    }

    public static LifecycleEvent fromJson(JsonNode root) {
        JsonNode version = root.get("schemaVersion");
        if (version == null || !version.isIntegralNumber()) {
            throw new InvalidLifecycleEventException("missing or non-integer field 'schemaVersion'");
        }
        if (version.intValue() != LifecycleEvent.SCHEMA_VERSION) {
            throw new InvalidLifecycleEventException("schemaVersion %d is not supported; this build reads %d"
                    .formatted(version.intValue(), LifecycleEvent.SCHEMA_VERSION));
        }
        LifecycleEventType type = enumValue(LifecycleEventType.class, requireString(root, "type"), "type");
        String requestId = optString(root, "requestId");
        if (requestId == null && !type.isMarker()) {
            throw new InvalidLifecycleEventException("missing required field 'requestId'");
        }
        String service = requireString(root, "service");
        String instance = requireString(root, "instance");
        long seq = optLong(root, "seq") == null ? -1 : optLong(root, "seq");
        if (seq < 1) {
            throw new InvalidLifecycleEventException("field 'seq' must be a positive integer");
        }
        Instant timestamp;
        String ts = requireString(root, "timestamp");
        try {
            timestamp = Instant.parse(ts);
        } catch (DateTimeParseException e) {
            throw new InvalidLifecycleEventException("field 'timestamp' is not an ISO-8601 instant: '%s'".formatted(ts));
        }
        String outcome = optString(root, "outcome");
        String reason = optString(root, "reason");
        String source = optString(root, "source");
        Long chunk = optLong(root, "chunk");
        Long layer = optLong(root, "layer");
        Long tokens = optLong(root, "tokens");
        Long pages = optLong(root, "pages");
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type,
                outcome == null ? null : enumValue(LifecycleOutcome.class, outcome, "outcome"),
                reason == null ? null : CancelReason.fromWire(reason),
                source == null ? null : CancelSource.fromWire(source),
                chunk == null ? null : Math.toIntExact(chunk), layer == null ? null : Math.toIntExact(layer),
                tokens == null ? null : Math.toIntExact(tokens),
                optLong(root, "step"), optLong(root, "bytes"), pages == null ? null : Math.toIntExact(pages),
                optString(root, "prefillInstance"), optString(root, "decodeInstance"), optLong(root, "dropped"),
                optLong(root, "droppedFromSeq"), optLong(root, "droppedToSeq"), optString(root, "detail"),
                optString(root, "incarnation"));
    }

    private static <T extends Enum<T>> T enumValue(Class<T> type, String value, String field) {
        try {
            return Enum.valueOf(type, value);
        } catch (IllegalArgumentException e) {
            throw new InvalidLifecycleEventException("unknown %s '%s'".formatted(field, value));
        }
    }

    private static String requireString(JsonNode parent, String field) {
        String value = optString(parent, field);
        if (value == null || value.isBlank()) {
            throw new InvalidLifecycleEventException("missing required field '%s'".formatted(field));
        }
        return value;
    }

    private static String optString(JsonNode parent, String field) {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isString()) {
            throw new InvalidLifecycleEventException("field '%s' must be a string".formatted(field));
        }
        return node.stringValue();
    }

    private static Long optLong(JsonNode parent, String field) {
        JsonNode node = parent.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isIntegralNumber() || !node.canConvertToLong()) {
            throw new InvalidLifecycleEventException("field '%s' must be an integer".formatted(field));
        }
        return node.longValue();
    }

    private static String abbreviate(String message) {
        String oneLine = String.valueOf(message).replaceAll("\\s+", " ");
        return oneLine.length() <= 160 ? oneLine : oneLine.substring(0, 160) + "...";
    }
}
