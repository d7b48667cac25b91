package dev.ripcord.gateway.relay;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Wires the {@link CancelRelay} when {@code ripcord.gateway.cancel-relay.enabled} (default) and
 * {@code ripcord.cancel.propagation} includes Kafka; otherwise there is none and an explicit cancel reaches only the
 * requests of the gateway that receives it. The relay's Kafka clients take the same brokers and security settings
 * as the cancellations topic's ({@code spring.kafka.*}, and the binder's {@code configuration} map: docs/security.md).
 * The relay topic is created at startup when absent: the cancellations topic's partitions and replication factor,
 * {@code cleanup.policy=delete}, retention 10 minutes (a relay matters for seconds), with three replicas or more
 * {@code min.insync.replicas} a majority of them.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(CancelRelayProperties.class)
public class CancelRelayConfiguration {

    static final Duration TOPIC_RETENTION = Duration.ofMinutes(10);

    /** How long the broker holds the relay consumer's empty fetch: Kafka's default. */
    static final int RELAY_FETCH_MAX_WAIT_MS = 500;

    @Bean(destroyMethod = "close")
    CancelRelayHolder cancelRelay(CancelRelayProperties properties, CancelProperties cancel,
                                  RequestContexts contexts, ObjectProvider<KafkaProperties> kafka,
                                  Environment environment) {
        if (!properties.enabled() || !cancel.propagation().kafka()) {
            return new CancelRelayHolder(null);
        }
        KafkaProperties kafkaProperties = kafka.getIfAvailable(KafkaProperties::new);
        Map<String, Object> admin = clientConfig(kafkaProperties.buildAdminProperties(), environment);
        provision(admin, properties, cancel);
        Map<String, Object> producer = clientConfig(kafkaProperties.buildProducerProperties(), environment);
        producer.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        producer.put(ProducerConfig.ACKS_CONFIG, "1");
        producer.put(ProducerConfig.CLIENT_ID_CONFIG, "ripcord-cancel-relay-" + cancel.instanceId());
        Map<String, Object> consumer = clientConfig(kafkaProperties.buildConsumerProperties(), environment);
        consumer.put(ConsumerConfig.CLIENT_ID_CONFIG, "ripcord-cancel-relay-" + cancel.instanceId());
        // Long polling, as for the cancellations (CancelBindingDefaults): the broker answers a pending fetch as soon
        // as a relay record arrives, so only an empty fetch waits this long. A short wait only multiplies idle fetch
        // round trips: at 20 ms they cost an idle gateway 30 ms of CPU a second and the broker twice that.
        consumer.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, RELAY_FETCH_MAX_WAIT_MS);
        return new CancelRelayHolder(new CancelRelay(properties, contexts, cancel.instanceId(), producer, consumer,
                Clock.systemUTC()));
    }

    /** Boot's client settings, the binder's brokers, and the binder's client configuration map (security). */
    public static Map<String, Object> clientConfig(Map<String, Object> base, Environment environment) {
        Map<String, Object> config = new HashMap<>(base);
        String brokers = environment.getProperty("spring.cloud.stream.kafka.binder.brokers");
        if (brokers != null && !brokers.isBlank()) {
            config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, brokers);
        }
        Binder.get(environment).bind("spring.cloud.stream.kafka.binder.configuration",
                Bindable.mapOf(String.class, String.class)).ifBound(settings -> settings.forEach((key, value) -> {
                    if (key.startsWith("security.") || key.startsWith("sasl.") || key.startsWith("ssl.")) {
                        // The binder reads store locations as Spring resources; Kafka wants a path.
                        config.put(key, key.endsWith(".location") && value.startsWith("file:")
                                ? value.substring("file:".length()) : value);
                    }
                }));
        return config;
    }

    /**
     * The relay topic as the gateway creates it when absent: the cancellations topic's partitions and replication
     * factor, {@code cleanup.policy=delete}, retention {@link #TOPIC_RETENTION}. Public so that deployment files that
     * create it ahead of the gateways (compose's kafka-init, Strimzi's KafkaTopic) are checked against it.
     */
    public static NewTopic topic(CancelRelayProperties properties, CancelProperties cancel) {
        Map<String, String> configs = new HashMap<>(Map.of(
                TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE,
                TopicConfig.RETENTION_MS_CONFIG, Long.toString(TOPIC_RETENTION.toMillis()),
                TopicConfig.SEGMENT_MS_CONFIG, Long.toString(TOPIC_RETENTION.toMillis() / 2)));
        if (cancel.replicationFactor() >= 3) {
            // A majority of the replicas, as on the cancellations and lifecycle topics; below three, the broker's.
            configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(cancel.replicationFactor() / 2 + 1));
        }
        return new NewTopic(properties.topic(), cancel.partitions(), (short) cancel.replicationFactor())
                .configs(configs);
    }

    private static void provision(Map<String, Object> adminConfig, CancelRelayProperties properties,
                                  CancelProperties cancel) {
        if (!cancel.provisionTopics()) {
            return;
        }
        Map<String, Object> config = new HashMap<>(adminConfig);
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, cancel.adminTimeout().toMillis());
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, timeoutMs);
        config.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, timeoutMs);
        NewTopic topic = topic(properties, cancel);
        try (Admin admin = Admin.create(config)) {
            admin.createTopics(List.of(topic)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException("could not provision Kafka topic " + properties.topic() + ": "
                        + e.getCause(), e.getCause());
            }
        } catch (TimeoutException e) {
            throw new IllegalStateException("could not provision Kafka topic " + properties.topic() + " within "
                    + cancel.adminTimeout(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while provisioning " + properties.topic(), e);
        }
    }

    /**
     * The relay, or none (relay disabled or no Kafka): a holder, because a bean may not be null and the cancel route
     * must work either way.
     */
    public record CancelRelayHolder(CancelRelay relay) implements AutoCloseable {

        public java.util.Optional<CancelRelay> get() {
            return java.util.Optional.ofNullable(relay);
        }

        @Override
        public void close() {
            if (relay != null) {
                relay.close();
            }
        }
    }
}
