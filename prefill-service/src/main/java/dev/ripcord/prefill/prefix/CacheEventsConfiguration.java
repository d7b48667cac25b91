package dev.ripcord.prefill.prefix;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.engine.PrefixCacheListener;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.worker.EngineProperties;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * The prefill worker's {@link PrefixCacheListener}, a {@link CacheEventPublisher} on the prefix-cache topic, when
 * {@code ripcord.prefill.cache-events.enabled} (the default) and the worker has Kafka ({@code ripcord.cancel.propagation}
 * {@code both} or {@code kafka}); otherwise no listener bean (the engine tells nobody, and gateways route by load).
 *
 * <p>The topic is declared as a {@link NewTopic} bean (created at startup when absent, like the lifecycle topic):
 * {@code cleanup.policy=delete} (never compacted: a gateway rebuilds a worker's pages from every event since its
 * last {@code CLEARED}, and compaction would keep one per worker). The producer takes the same brokers and security
 * settings as the cancellations binder, writes with {@code acks=all}, idempotent, and {@code linger.ms} 5: an event
 * matters once the next request with that prefix arrives, not within the millisecond.
 */
@Configuration(proxyBeanMethods = false)
@Conditional(CacheEventsConfiguration.OnCacheEvents.class)
@EnableConfigurationProperties(CacheEventsProperties.class)
public class CacheEventsConfiguration {

    @Bean
    NewTopic ripcordPrefixCacheTopic(CacheEventsProperties properties) {
        return topic(properties);
    }

    @Bean(destroyMethod = "close")
    CacheEventPublisher prefixCacheListener(CacheEventsProperties properties, EngineProperties engine,
                                            ObjectProvider<KafkaProperties> kafka, Environment environment,
                                            MeterRegistry meters) {
        Producer<String, byte[]> producer = new KafkaProducer<>(producerConfig(kafka, environment),
                new StringSerializer(), new ByteArraySerializer());
        CacheEventPublisher publisher = new CacheEventPublisher(properties.queueCapacity(), engine.pageTokens(),
                new KafkaSink(producer, properties.topic()), meters);
        return publisher;
    }

    /** Starts the publisher once the prefill endpoint listens: its port is part of the worker's ID. */
    @Bean
    ApplicationListener<WebServerInitializedEvent> prefixCacheEventsStart(CacheEventPublisher publisher,
                                                                          CacheEventsProperties properties,
                                                                          Environment environment) {
        return event -> {
            if ("management".equals(event.getApplicationContext().getServerNamespace())) {
                return; // the actuator's own server: not where gateways send prompts
            }
            publisher.start(workerId(properties, environment, event.getWebServer().getPort()));
        };
    }

    /** {@code ripcord.prefill.cache-events.worker-id}, or this host's address (or {@code server.address}) and port. */
    static String workerId(CacheEventsProperties properties, Environment environment, int port) {
        if (properties.workerId() != null && !properties.workerId().isBlank()) {
            return properties.workerId().trim();
        }
        String host = environment.getProperty("server.address");
        if (host == null || host.isBlank() || host.equals("0.0.0.0") || host.equals("::")) {
            try {
                host = InetAddress.getLocalHost().getHostAddress();
            } catch (UnknownHostException e) {
                host = InetAddress.getLoopbackAddress().getHostAddress();
            }
        }
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /** The prefix-cache topic as this service creates it; public so deployment files are checked against it. */
    public static NewTopic topic(CacheEventsProperties p) {
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE);
        configs.put(TopicConfig.RETENTION_MS_CONFIG, Long.toString(p.retention().toMillis()));
        if (p.replicationFactor() >= 3) {
            // A majority of the replicas, as on the other Ripcord topics; below three, the broker's default.
            configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(p.replicationFactor() / 2 + 1));
        }
        return new NewTopic(p.topic(), p.partitions(), (short) p.replicationFactor()).configs(configs);
    }

    static Map<String, Object> producerConfig(ObjectProvider<KafkaProperties> kafka, Environment environment) {
        Map<String, Object> config = new HashMap<>(kafka.getIfAvailable(KafkaProperties::new).buildProducerProperties());
        String brokers = environment.getProperty("spring.cloud.stream.kafka.binder.brokers");
        if (brokers != null && !brokers.isBlank()) {
            config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, brokers);
        }
        Binder.get(environment).bind("spring.cloud.stream.kafka.binder.configuration",
                Bindable.mapOf(String.class, String.class)).ifBound(settings -> settings.forEach((key, value) -> {
                    if (ProducerConfig.configNames().contains(key)) {
                        // The binder reads store locations as Spring resources; Kafka wants a path.
                        config.put(key, key.endsWith(".location") && value.startsWith("file:")
                                ? value.substring("file:".length()) : value);
                    }
                }));
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
        config.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "ripcord-prefix-cache-events");
        return config;
    }

    /** Sends each event keyed by its worker; the producer closes with the publisher. */
    record KafkaSink(Producer<String, byte[]> producer, String topic) implements CacheEventPublisher.Sink {
        @Override
        public void send(PrefixCacheEvent event, java.util.function.Consumer<Throwable> failed) {
            producer.send(new ProducerRecord<>(topic, event.key(), event.encode()), (metadata, error) -> {
                if (error != null) {
                    failed.accept(error);
                }
            });
        }

        @Override
        public void close() {
            producer.close(java.time.Duration.ofSeconds(2));
        }
    }

    /** Cache events on, and Kafka in the worker's cancel propagation ({@code both}, the default, or {@code kafka}). */
    static final class OnCacheEvents extends SpringBootCondition {
        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            Binder binder = Binder.get(context.getEnvironment());
            boolean enabled = binder.bind("ripcord.prefill.cache-events.enabled", Boolean.class).orElse(true);
            CancelPropagation propagation = binder.bind("ripcord.cancel.propagation", CancelPropagation.class)
                    .orElse(CancelPropagation.BOTH);
            String why = "ripcord.prefill.cache-events.enabled=" + enabled + ", ripcord.cancel.propagation="
                    + propagation;
            return enabled && propagation.kafka() ? ConditionOutcome.match(why) : ConditionOutcome.noMatch(why);
        }
    }
}
