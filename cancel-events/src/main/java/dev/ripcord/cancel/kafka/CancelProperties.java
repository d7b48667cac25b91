package dev.ripcord.cancel.kafka;

import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancellationRegistry;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.cancel.*}: how cancellations travel between services. Every default works on a laptop with one
 * broker at {@code localhost:9092} (the binder follows {@code spring.kafka.bootstrap-servers}).
 *
 * @param propagation          which paths carry cancellations: {@code both} (default), {@code in-band}, {@code kafka},
 *                             {@code none}; without {@code kafka} no Kafka client is created at all
 * @param consume              whether this service consumes the topic and feeds its {@link CancellationRegistry}
 *                             (workers: {@code true}; the gateway only publishes: {@code false}, the default)
 * @param topic                the cancellations topic
 * @param dltTopic             where unreadable records go, raw bytes kept
 * @param partitions           partitions of the topic when this service creates it
 * @param replicationFactor    replication factor of both topics when this service creates them
 * @param retention            how long the topic keeps cancellations ({@code retention.ms}); at least the replay window
 * @param dltRetention         how long the dead-letter topic keeps records
 * @param replayWindow         how much recent history a consumer re-reads when it gets partitions, so that a worker
 *                             that starts late still learns of recent cancels; {@code 0} disables replay
 * @param tombstoneTtl         how long the registry keeps a cancel for a request it has not seen (yet)
 * @param tombstoneMaxSize     how many such cancels it keeps at most (oldest evicted first)
 * @param provisionTopics      whether to create the topics at startup if absent
 * @param adminTimeout         how long startup waits for the broker when provisioning
 * @param publishQueueCapacity publishes (and dead-letters) waiting for the publisher thread or a broker ack; beyond
 *                             this, publishes fail at once instead of queueing without bound
 * @param publishMaxAttempts   send attempts per record, the first one included
 * @param publishRetryBackoff  delay before the first retry; doubles per retry
 * @param instanceId           this process's ID: names its consumer group and goes into {@code origin.instance};
 *                             must be unique per process; a random one is generated when unset
 */
@ConfigurationProperties("ripcord.cancel")
@Validated
public record CancelProperties(
        @DefaultValue("both") @NotNull CancelPropagation propagation,
        @DefaultValue("false") boolean consume,
        @DefaultValue("ripcord.cancellations") @NotNull @Pattern(regexp = TOPIC_NAME) String topic,
        @DefaultValue("ripcord.cancellations.dlt") @NotNull @Pattern(regexp = TOPIC_NAME) String dltTopic,
        @DefaultValue("3") @Min(1) int partitions,
        @DefaultValue("1") @Min(1) @Max(Short.MAX_VALUE) int replicationFactor,
        @DefaultValue("1h") @NotNull Duration retention,
        @DefaultValue("7d") @NotNull Duration dltRetention,
        @DefaultValue("10m") @NotNull Duration replayWindow,
        @DefaultValue("10m") @NotNull Duration tombstoneTtl,
        @DefaultValue("100000") @Min(1) int tombstoneMaxSize,
        @DefaultValue("true") boolean provisionTopics,
        @DefaultValue("30s") @NotNull Duration adminTimeout,
        @DefaultValue("10000") @Min(1) int publishQueueCapacity,
        @DefaultValue("3") @Min(1) @Max(10) int publishMaxAttempts,
        @DefaultValue("200ms") @NotNull Duration publishRetryBackoff,
        String instanceId) {

    /** Kafka's own rule for topic names. */
    static final String TOPIC_NAME = "[a-zA-Z0-9._-]{1,249}";

    public CancelProperties {
        requirePositive(retention, "retention");
        requirePositive(dltRetention, "dlt-retention");
        requirePositive(tombstoneTtl, "tombstone-ttl");
        requirePositive(adminTimeout, "admin-timeout");
        requirePositive(publishRetryBackoff, "publish-retry-backoff");
        if (replayWindow != null && (replayWindow.isNegative() || (retention != null
                && replayWindow.compareTo(retention) > 0))) {
            throw new IllegalArgumentException(
                    "ripcord.cancel.replay-window (%s) must be between 0 and ripcord.cancel.retention (%s): "
                            .formatted(replayWindow, retention)
                            + "a consumer cannot replay history the topic no longer has");
        }
        if (topic != null && topic.equals(dltTopic)) {
            throw new IllegalArgumentException("ripcord.cancel.dlt-topic must differ from ripcord.cancel.topic");
        }
        if (instanceId == null || instanceId.isBlank()) {
            instanceId = randomInstanceId();
        }
    }

    /** Twelve hex digits; unique enough for the handful of processes that share a topic. */
    static String randomInstanceId() {
        return HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong()).substring(4);
    }

    private static void requirePositive(Duration value, String name) {
        if (value != null && !value.isPositive()) {
            throw new IllegalArgumentException("ripcord.cancel.%s must be positive, was %s".formatted(name, value));
        }
    }
}
