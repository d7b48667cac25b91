package dev.ripcord.prefill.prefix;

import java.time.Duration;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.prefill.cache-events.*}: the prefix-cache events a prefill worker publishes for the gateways'
 * cache-aware routing (docs/configuration.md, docs/architecture.md).
 *
 * @param enabled           publish them (needs Kafka: {@code ripcord.cancel.propagation} {@code both} or
 *                          {@code kafka}); off, the engine's cache changes are told to nobody
 * @param topic             the prefix-cache topic
 * @param partitions        partitions when this service creates the topic
 * @param replicationFactor replication factor when it creates the topic
 * @param retention         {@code retention.ms} of the topic: how far back a gateway that starts can rebuild
 * @param queueCapacity     events waiting for the publisher's thread; beyond it they are dropped, counted, and the
 *                          worker starts a new generation so gateways forget what they knew of it
 * @param workerId          this worker as the gateways address it, {@code host:port} of its prefill endpoint (the
 *                          authority of its entry in {@code ripcord.gateway.prefill-workers}); empty: this host's
 *                          address (or {@code server.address}) and the port the server listens on
 */
@Validated
@ConfigurationProperties("ripcord.prefill.cache-events")
public record CacheEventsProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("ripcord.prefix-cache") @NotNull @Pattern(regexp = "[a-zA-Z0-9._-]{1,249}") String topic,
        @DefaultValue("3") @Min(1) int partitions,
        @DefaultValue("1") @Min(1) @Max(Short.MAX_VALUE) int replicationFactor,
        @DefaultValue("1d") @NotNull Duration retention,
        @DefaultValue("10000") @Min(1) int queueCapacity,
        @DefaultValue("") String workerId) {

    public CacheEventsProperties {
        if (retention != null && (retention.isZero() || retention.isNegative())) {
            throw new IllegalArgumentException("ripcord.prefill.cache-events.retention must be positive: " + retention);
        }
    }
}
