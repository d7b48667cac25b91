package dev.ripcord.lifecycle.kafka;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.lifecycle.LifecyclePublisher;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * The service's {@link LifecyclePublisher}: publishing to the lifecycle topic when {@code ripcord.lifecycle.enabled}
 * (the default) and the service has Kafka ({@code ripcord.cancel.propagation} {@code both} or {@code kafka}),
 * disabled otherwise. The topic is declared as a {@link NewTopic} bean (KafkaAdmin creates it at startup when absent,
 * like the cancellations topic): {@code cleanup.policy=delete} (a log, never compacted: compaction would keep one
 * event per request), {@code retention.ms} from {@code ripcord.lifecycle.retention}, broker-time timestamps so that
 * {@code ripcord audit --since} reads a window by one clock.
 *
 * <p>The producer takes the same brokers and client settings (security) as the cancellations binder: Boot's
 * {@code spring.kafka.*}, then {@code spring.cloud.stream.kafka.binder.brokers} and
 * {@code spring.cloud.stream.kafka.binder.configuration.*}.
 */
@AutoConfiguration
@EnableConfigurationProperties(LifecycleProperties.class)
public final class LifecycleAutoConfiguration {

    static final String BINDER_CONFIGURATION = "spring.cloud.stream.kafka.binder.configuration";

    @Bean
    @ConditionalOnMissingBean
    @Conditional(OnLifecycleKafka.Not.class)
    LifecyclePublisher disabledLifecyclePublisher() {
        return LifecyclePublisher.disabled();
    }

    @Configuration(proxyBeanMethods = false)
    @Conditional(OnLifecycleKafka.class)
    static final class KafkaLifecycleConfiguration {

        @Bean
        NewTopic ripcordLifecycleTopic(LifecycleProperties properties) {
            return topic(properties);
        }

        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean
        LifecyclePublisher lifecyclePublisher(LifecycleProperties properties, CancelProperties cancel,
                ObjectProvider<KafkaProperties> kafkaProperties, Environment environment) {
            KafkaLifecycleSink sink = KafkaLifecycleSink.create(producerConfig(kafkaProperties, environment),
                    properties.topic());
            return new LifecyclePublisher(environment.getProperty("spring.application.name", "ripcord"),
                    cancel.instanceId(), properties.queueCapacity(), sink, Clock.systemUTC(), properties.heartbeat());
        }
    }

    /** The lifecycle topic as this service would create it. */
    public static NewTopic topic(LifecycleProperties p) {
        Map<String, String> configs = new java.util.LinkedHashMap<>();
        configs.put(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE);
        configs.put(TopicConfig.RETENTION_MS_CONFIG, Long.toString(p.retention().toMillis()));
        configs.put(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime");
        if (p.replicationFactor() >= 3) {
            // A majority of the replicas, as the cancellations topic (CancelTopics); below three, the broker's default.
            configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(p.replicationFactor() / 2 + 1));
        }
        return new NewTopic(p.topic(), p.partitions(), (short) p.replicationFactor()).configs(configs);
    }

    static Map<String, Object> producerConfig(ObjectProvider<KafkaProperties> kafkaProperties,
                                              Environment environment) {
        Map<String, Object> config = new HashMap<>(
                kafkaProperties.getIfAvailable(KafkaProperties::new).buildProducerProperties());
        String brokers = environment.getProperty("spring.cloud.stream.kafka.binder.brokers");
        if (brokers != null && !brokers.isBlank()) {
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        }
        Binder.get(environment).bind(BINDER_CONFIGURATION, Bindable.mapOf(String.class, String.class))
                .ifBound(configuration -> configuration.forEach((key, value) -> {
                    if (ProducerConfig.configNames().contains(key)) {
                        config.put(key, key.endsWith(".location") && value.startsWith("file:")
                                ? value.substring("file:".length()) : value);
                    }
                }));
        return config;
    }

    /** Lifecycle log on, and Kafka in the service's cancel propagation ({@code both}, the default, or {@code kafka}). */
    static class OnLifecycleKafka extends SpringBootCondition {

        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            Binder binder = Binder.get(context.getEnvironment());
            boolean enabled = binder.bind("ripcord.lifecycle.enabled", Boolean.class).orElse(true);
            CancelPropagation propagation = binder.bind("ripcord.cancel.propagation", CancelPropagation.class)
                    .orElse(CancelPropagation.BOTH);
            boolean kafka = propagation.kafka();
            boolean on = enabled && kafka;
            String why = "ripcord.lifecycle.enabled=" + enabled + ", ripcord.cancel.propagation=" + propagation;
            return on == expected() ? ConditionOutcome.match(why) : ConditionOutcome.noMatch(why);
        }

        boolean expected() {
            return true;
        }

        static final class Not extends OnLifecycleKafka {
            @Override
            boolean expected() {
                return false;
            }
        }
    }
}
