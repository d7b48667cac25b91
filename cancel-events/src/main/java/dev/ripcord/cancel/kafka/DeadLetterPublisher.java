package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.Map;

import dev.ripcord.cancel.kafka.KafkaSendQueue.SendOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.MessageHeaders;

/**
 * Copies a poison record to the dead-letter topic, value bytes untouched, through the {@link KafkaSendQueue} so the
 * consumer thread never waits for it.
 *
 * <p>The dead-letter key is the poison record's coordinates ({@code topic-partition@offset}), not its key: every
 * instance consumes every record (broadcast) and each replays its window on start, so the same poison record is
 * dead-lettered several times; with this key, compaction of the dead-letter topic folds the copies into one. Headers
 * (all UTF-8 strings): {@value #REASON}, {@value #DETAIL}, {@value #ORIGINAL_TOPIC}, {@value #ORIGINAL_PARTITION},
 * {@value #ORIGINAL_OFFSET}, {@value #ORIGINAL_KEY} (raw bytes, when the record had a key), {@value #INSTANCE}.
 */
final class DeadLetterPublisher {

    static final String REASON = "ripcord-dlt-reason";
    static final String DETAIL = "ripcord-dlt-detail";
    static final String ORIGINAL_TOPIC = "ripcord-dlt-original-topic";
    static final String ORIGINAL_PARTITION = "ripcord-dlt-original-partition";
    static final String ORIGINAL_OFFSET = "ripcord-dlt-original-offset";
    static final String ORIGINAL_KEY = "ripcord-dlt-original-key";
    static final String INSTANCE = "ripcord-dlt-instance";

    private static final Logger log = LoggerFactory.getLogger(DeadLetterPublisher.class);

    /** A record that could not be read, and why. */
    record Poison(String topic, int partition, long offset, byte[] key, byte[] value, String reason, String detail) {

        String coordinates() {
            return topic + "-" + partition + "@" + offset;
        }
    }

    private final KafkaSendQueue queue;
    private final String instanceId;
    private final String dltTopic;
    private final Map<SendOutcome, Counter> outcomes = new EnumMap<>(SendOutcome.class);

    DeadLetterPublisher(KafkaSendQueue queue, String instanceId, String dltTopic, MeterRegistry meters) {
        this.queue = queue;
        this.instanceId = instanceId;
        this.dltTopic = dltTopic;
        for (SendOutcome outcome : SendOutcome.values()) {
            outcomes.put(outcome, Counter.builder("ripcord.cancel.dead-lettered")
                    .description("Poison records copied to the dead-letter topic, by outcome")
                    .tag("outcome", outcome.name().toLowerCase())
                    .register(meters));
        }
    }

    void deadLetter(Poison poison) {
        MessageBuilder<byte[]> message = MessageBuilder.withPayload(poison.value() == null ? new byte[0] : poison.value())
                .setHeader(KafkaHeaders.KEY, utf8(poison.coordinates()))
                .setHeader(MessageHeaders.CONTENT_TYPE, "application/octet-stream")
                .setHeader(REASON, utf8(poison.reason()))
                .setHeader(DETAIL, utf8(poison.detail()))
                .setHeader(ORIGINAL_TOPIC, utf8(poison.topic()))
                .setHeader(ORIGINAL_PARTITION, utf8(Integer.toString(poison.partition())))
                .setHeader(ORIGINAL_OFFSET, utf8(Long.toString(poison.offset())))
                .setHeader(INSTANCE, utf8(instanceId));
        if (poison.key() != null) {
            message.setHeader(ORIGINAL_KEY, poison.key());
        }
        queue.submit(CancelBindings.DLT_OUTPUT, message.build(), (outcome, attempts, error) -> {
            outcomes.get(outcome).increment();
            if (outcome != SendOutcome.ACKED) {
                log.warn("could not dead-letter poison record {} to {} ({}): {}", poison.coordinates(), dltTopic,
                        outcome, String.valueOf(error));
            }
        });
    }

    private static byte[] utf8(String value) {
        return String.valueOf(value).getBytes(StandardCharsets.UTF_8);
    }
}
