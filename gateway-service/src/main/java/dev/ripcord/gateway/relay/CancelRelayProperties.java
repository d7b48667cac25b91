package dev.ripcord.gateway.relay;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code ripcord.gateway.cancel-relay.*}: how an explicit cancel reaches the gateway that holds the request when it
 * lands on another one (see {@link CancelRelay}).
 *
 * @param enabled       relay explicit cancels between gateways over Kafka (default true; only when
 *                      {@code ripcord.cancel.propagation} includes Kafka, since it needs a broker)
 * @param topic         the topic the gateways share for it (default {@code ripcord.gateway.cancel-relay}; created at
 *                      startup when absent, {@code cleanup.policy=delete}, retention 10 minutes)
 * @param answerTimeout how long the receiving gateway waits for the owner's acknowledgement (default 2s). Every
 *                      answer other than "cancelled" (404) is given exactly
 *                      this long after the cancel arrived, so a caller cannot tell from the timing whether the ID
 *                      exists under another key
 */
@ConfigurationProperties("ripcord.gateway.cancel-relay")
public record CancelRelayProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("ripcord.gateway.cancel-relay") String topic,
        @DefaultValue("2s") Duration answerTimeout) {

    public CancelRelayProperties {
        if (!topic.matches("[a-zA-Z0-9._-]{1,249}")) {
            throw new IllegalArgumentException("ripcord.gateway.cancel-relay.topic is not a Kafka topic name: " + topic);
        }
        if (answerTimeout.compareTo(Duration.ofMillis(10)) < 0) {
            throw new IllegalArgumentException("ripcord.gateway.cancel-relay.answer-timeout must be at least 10ms, got "
                    + answerTimeout);
        }
    }
}
