package dev.ripcord.cli.cancels;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.InvalidCancelEventException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * What the cancels commands share: decoding a record exactly as a worker does ({@link CancelEventCodec}, key must be
 * the request ID), printing it, and a producer configured as the services' ({@code acks=all}, idempotent): a publish
 * returns only once the broker has it on every in-sync replica.
 */
final class CancelRecords {

    static final JsonMapper JSON = JsonMapper.builder().build();

    private CancelRecords() {
    }

    /** A record read back: its event, or why it is not one. */
    record Decoded(ConsumerRecord<byte[], byte[]> record, CancelEvent event, String problem) {

        boolean valid() {
            return event != null;
        }
    }

    static Decoded decode(ConsumerRecord<byte[], byte[]> record) {
        if (record.value() == null) {
            return new Decoded(record, null, "DELETE_MARKER: null value");
        }
        try {
            CancelEvent event = CancelEventCodec.decode(record.value());
            if (record.key() != null && !event.requestId().equals(new String(record.key(), StandardCharsets.UTF_8))) {
                return new Decoded(record, null, "KEY_MISMATCH: record key is not the request ID");
            }
            return new Decoded(record, event, null);
        } catch (InvalidCancelEventException e) {
            return new Decoded(record, null, e.problem() + ": " + e.getMessage());
        }
    }

    /** {@code 2026-12-01T12:00:00.123Z  req-1  CLIENT_DISCONNECT  gateway/3f2a  p2@17}, or the problem. */
    static String human(Decoded d) {
        ConsumerRecord<byte[], byte[]> r = d.record();
        String at = "p" + r.partition() + "@" + r.offset();
        if (!d.valid()) {
            return Instant.ofEpochMilli(r.timestamp()) + "  " + text(r.key()) + "  UNREADABLE (" + d.problem() + ")  "
                    + at;
        }
        CancelEvent e = d.event();
        return e.timestamp() + "  " + e.requestId() + "  " + e.reason() + "  " + e.origin() + "  " + at;
    }

    /** One JSON object per record: coordinates, the broker's timestamp, and the event (or the problem). */
    static String json(Decoded d) {
        ConsumerRecord<byte[], byte[]> r = d.record();
        ObjectNode node = JSON.createObjectNode();
        node.put("topic", r.topic());
        node.put("partition", r.partition());
        node.put("offset", r.offset());
        node.put("recordTimestamp", Instant.ofEpochMilli(r.timestamp()).toString());
        node.put("key", text(r.key()));
        if (d.valid()) {
            node.set("event", JSON.readTree(CancelEventCodec.encode(d.event())));
        } else {
            node.put("problem", d.problem());
            node.put("value", text(r.value()));
        }
        return JSON.writeValueAsString(node);
    }

    static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static KafkaProducer<byte[], byte[]> producer(Map<String, Object> clientConfig) {
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.put("acks", "all");
        config.put("enable.idempotence", "true");
        config.put("linger.ms", "0");
        config.putIfAbsent("max.block.ms", "10000");
        config.putIfAbsent("delivery.timeout.ms", "30000");
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(config);
    }

    /** Sends and waits for the broker's acknowledgement. */
    static RecordMetadata send(KafkaProducer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record) {
        try {
            return producer.send(record).get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("publish to " + record.topic() + " failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("publish to " + record.topic() + " was not acknowledged within 60 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while publishing");
        }
    }

    /** A cancel record as the services write it: the request ID as key, the JSON event as value. */
    static ProducerRecord<byte[], byte[]> cancelRecord(String topic, CancelEvent event) {
        return new ProducerRecord<>(topic, event.requestId().getBytes(StandardCharsets.UTF_8),
                CancelEventCodec.encode(event));
    }
}
