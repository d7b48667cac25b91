package dev.ripcord.lifecycle.kafka;

import java.time.Duration;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.lifecycle.*}: the lifecycle log (docs/configuration.md, docs/lifecycles.md).
 *
 * @param enabled           publish the lifecycle log (needs Kafka: {@code ripcord.cancel.propagation} {@code both}
 *                          or {@code kafka}); off, every emit is a no-op
 * @param topic             the lifecycle topic
 * @param partitions        partitions when this service creates the topic
 * @param replicationFactor replication factor when it creates the topic
 * @param retention         {@code retention.ms} of the topic (a log: {@code cleanup.policy=delete}, never compacted)
 * @param queueCapacity     events waiting for the publisher's thread; beyond it they are dropped and counted
 * @param heartbeat         how often the publisher emits a {@code HEARTBEAT} (its high-water mark) when it took a
 *                          sequence number since the last one, so that a lost tail is a gap the audit sees; 0 for none
 */
@Validated
@ConfigurationProperties("ripcord.lifecycle")
public record LifecycleProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("ripcord.lifecycle") @NotNull @Pattern(regexp = "[a-zA-Z0-9._-]{1,249}") String topic,
        @DefaultValue("3") @Min(1) int partitions,
        @DefaultValue("1") @Min(1) @Max(Short.MAX_VALUE) int replicationFactor,
        @DefaultValue("7d") @NotNull Duration retention,
        @DefaultValue("10000") @Min(1) int queueCapacity,
        @DefaultValue("1s") @NotNull Duration heartbeat) {

    public LifecycleProperties {
        if (heartbeat != null && heartbeat.isNegative()) {
            throw new IllegalArgumentException("ripcord.lifecycle.heartbeat must not be negative: " + heartbeat);
        }
        if (retention != null && (retention.isZero() || retention.isNegative())) {
            throw new IllegalArgumentException("ripcord.lifecycle.retention must be positive: " + retention);
        }
    }
}
