package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

import dev.ripcord.cancel.InvalidCancelEventException;
import dev.ripcord.cancel.kafka.KafkaSendQueue.SendOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.MessageBuilder;

/**
 * Copies a poison record to the dead-letter topic with Spring for Apache Kafka's {@link DeadLetterPublishingRecoverer}:
 * value bytes untouched, the original key, and the standard {@code kafka_dlt-*} headers
 * ({@link KafkaHeaders#DLT_ORIGINAL_TOPIC}, {@code -partition} (4-byte int), {@code -offset} (8-byte long),
 * {@code -timestamp}, {@code -timestamp-type}, {@code -consumer-group} (which names the instance:
 * {@code ripcord-cancel.<app>.<instance-id>}; set through the recoverer's headers function), {@link KafkaHeaders#DLT_EXCEPTION_FQCN}, {@code -message}
 * ({@code PROBLEM: detail}, e.g. {@code NOT_JSON: ...}) and {@code -stacktrace}), so that any Kafka tool that knows
 * the convention reads them.
 *
 * <p>What is ours is only the last step: the recoverer's {@code publish} is overridden to hand the record to the
 * {@link KafkaSendQueue} instead of a {@code KafkaTemplate}, so the consumer thread never waits for the broker (the
 * template's send blocks up to {@code max.block.ms} on metadata, and the recoverer then waits for the send result).
 * The template the recoverer is built with is therefore never used to send.
 *
 * <p>The dead-letter record's key is the poison record's key (the request ID, usually): every instance consumes
 * every record (broadcast) and each replays its window on start, so the same poison record is dead-lettered several
 * times, and compaction of the dead-letter topic folds the copies into one. A record without a key gets its
 * coordinates ({@code topic-partition@offset}) as key, because a compacted topic refuses null keys.
 */
final class DeadLetterPublisher {

    private static final Logger log = LoggerFactory.getLogger(DeadLetterPublisher.class);

    /**
     * A record that could not be read, and why.
     *
     * @param timestamp the record's timestamp, or {@link ConsumerRecord#NO_TIMESTAMP}
     * @param reason    the {@link InvalidCancelEventException.Problem} name
     */
    record Poison(String topic, int partition, long offset, long timestamp, TimestampType timestampType, byte[] key,
                  byte[] value, String reason, String detail) {

        String coordinates() {
            return topic + "-" + partition + "@" + offset;
        }
    }

    private final Recoverer recoverer;
    private final KafkaSendQueue queue;
    private final String dltTopic;
    private final Map<SendOutcome, Counter> outcomes = new EnumMap<>(SendOutcome.class);

    /**
     * @param group the consumer group of the cancellations binding, for {@code kafka_dlt-original-consumer-group}
     *              (the recoverer takes it from the {@code Consumer}, which a Spring Cloud Stream function never sees)
     */
    DeadLetterPublisher(KafkaSendQueue queue, String dltTopic, String group, MeterRegistry meters) {
        this.queue = queue;
        this.dltTopic = dltTopic;
        this.recoverer = new Recoverer();
        if (group != null) {
            byte[] groupBytes = utf8(group);
            recoverer.setHeadersFunction((record, exception) -> new RecordHeaders(
                    new Header[] {new RecordHeader(KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP, groupBytes)}));
        }
        for (SendOutcome outcome : SendOutcome.values()) {
            outcomes.put(outcome, Counter.builder("ripcord.cancel.dead-lettered")
                    .description("Poison records copied to the dead-letter topic, by outcome")
                    .tag("outcome", outcome.name().toLowerCase())
                    .register(meters));
        }
    }

    /** Queues the copy and returns at once; the outcome is counted and a failure logged at WARN. */
    void deadLetter(Poison poison) {
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(poison.topic(), poison.partition(),
                poison.offset(), poison.timestamp(), poison.timestampType(), ConsumerRecord.NULL_SIZE,
                ConsumerRecord.NULL_SIZE, poison.key(), poison.value(),
                new RecordHeaders(), Optional.empty());
        recoverer.accept(record, new InvalidCancelEventException(
                InvalidCancelEventException.Problem.valueOf(poison.reason()), poison.reason() + ": " + poison.detail()));
    }

    /** The standard recoverer, publishing through our queue. */
    private final class Recoverer extends DeadLetterPublishingRecoverer {

        Recoverer() {
            // Never sends (publish is overridden); building it creates no producer.
            super(new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(Map.of())),
                    (record, exception) -> new TopicPartition(dltTopic, -1)); // -1: the producer picks (1 partition)
            setVerifyPartition(false);
            setFailIfSendResultIsError(false);
        }

        @Override
        protected ProducerRecord<Object, Object> createProducerRecord(ConsumerRecord<?, ?> record,
                TopicPartition topicPartition, Headers headers, byte[] key, byte[] value) {
            Object recordKey = record.key() != null ? record.key()
                    : (topicPartition == null ? null : utf8(record.topic() + "-" + record.partition() + "@"
                            + record.offset()));
            return new ProducerRecord<>(topicPartition.topic(), null, recordKey,
                    value != null ? value : record.value(), headers);
        }

        @Override
        protected void publish(ProducerRecord<Object, Object> out, KafkaOperations<Object, Object> template,
                               ConsumerRecord<?, ?> in) {
            String coordinates = in.topic() + "-" + in.partition() + "@" + in.offset();
            MessageBuilder<byte[]> message = MessageBuilder
                    .withPayload(out.value() instanceof byte[] bytes ? bytes : new byte[0])
                    .setHeader(KafkaHeaders.KEY, out.key())
                    .setHeader(MessageHeaders.CONTENT_TYPE, "application/octet-stream");
            for (Header header : out.headers()) {
                message.setHeader(header.key(), header.value());
            }
            queue.submit(CancelBindings.DLT_OUTPUT, message.build(), (outcome, attempts, error) -> {
                outcomes.get(outcome).increment();
                if (outcome != SendOutcome.ACKED) {
                    log.warn("could not dead-letter poison record {} to {} ({}): {}", coordinates, dltTopic,
                            outcome, String.valueOf(error));
                }
            });
        }
    }

    private static byte[] utf8(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
