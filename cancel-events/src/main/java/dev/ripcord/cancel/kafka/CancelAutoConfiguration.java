package dev.ripcord.cancel.kafka;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Origin;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.cloud.stream.config.BindingServiceProperties;
import org.springframework.cloud.stream.function.StreamBridge;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.messaging.Message;

/**
 * Wires the cancel library into a Spring Boot service.
 *
 * <ul>
 *   <li>Always: a {@link CancellationRegistry} (tombstone bounds from {@code ripcord.cancel.tombstone-*}, metrics to
 *       the application's {@link MeterRegistry}, else Micrometer's global registry).</li>
 *   <li>{@code ripcord.cancel.propagation} includes Kafka ({@code both}, the default, or {@code kafka}): topics are
 *       provisioned at startup ({@link TopicProvisioner}) and {@link CancelPublisher} publishes through Spring Cloud
 *       Stream, off the caller's thread ({@link KafkaSendQueue}).</li>
 *   <li>... and {@code ripcord.cancel.consume=true}: the {@value CancelBindings#CONSUMER_FUNCTION} function feeds
 *       every consumed cancellation to the registry, with replay of {@code ripcord.cancel.replay-window} on partition
 *       assignment ({@link ReplayWindowSeeker}) and dead-lettering of poison records.</li>
 *   <li>Otherwise {@link CancelPublisher#discarding()}: no Kafka client is created.</li>
 * </ul>
 *
 * Stream binding settings come from {@link CancelBindingDefaults}. Each bean backs off if the service defines one of
 * the same type.
 */
@AutoConfiguration
@EnableConfigurationProperties(CancelProperties.class)
public final class CancelAutoConfiguration {

    static final String BINDER_CONFIGURATION = "spring.cloud.stream.kafka.binder.configuration";

    @Bean
    @ConditionalOnMissingBean
    CancellationRegistry cancellationRegistry(CancelProperties properties, ObjectProvider<MeterRegistry> meters) {
        return new CancellationRegistry(
                new CancellationRegistry.Options(properties.tombstoneTtl(), properties.tombstoneMaxSize()),
                meters(meters));
    }

    @Bean
    @ConditionalOnMissingBean
    @Conditional(OnKafkaPropagation.Not.class)
    CancelPublisher discardingCancelPublisher() {
        return CancelPublisher.discarding();
    }

    static MeterRegistry meters(ObjectProvider<MeterRegistry> meters) {
        return meters.getIfUnique(() -> Metrics.globalRegistry);
    }

    /** The service's tracer and propagator (Micrometer Tracing, any bridge), or none: records then carry no trace. */
    static TraceHeaders traceHeaders(ObjectProvider<Tracer> tracer, ObjectProvider<Propagator> propagator) {
        Tracer t = tracer.getIfUnique();
        Propagator p = propagator.getIfUnique();
        return t == null || p == null ? TraceHeaders.NONE : new TraceHeaders(t, p);
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(StreamBridge.class)
    @Conditional(OnKafkaPropagation.class)
    static final class KafkaPropagationConfiguration {

        @Bean
        TopicProvisioner ripcordCancelTopicProvisioner(CancelProperties properties,
                ObjectProvider<KafkaProperties> kafkaProperties, Environment environment) {
            Map<String, Object> admin = new HashMap<>(
                    kafkaProperties.getIfAvailable(KafkaProperties::new).buildAdminProperties());
            // The same brokers the binder uses (CancelBindingDefaults points those at spring.kafka.bootstrap-servers).
            String brokers = environment.getProperty("spring.cloud.stream.kafka.binder.brokers");
            if (brokers != null && !brokers.isBlank()) {
                admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
            }
            // Client settings given to the binder (security.protocol, sasl.*, ssl.*: docs/security.md) apply to this
            // admin client too, so that security configured in either place reaches every Kafka client.
            Binder.get(environment).bind(BINDER_CONFIGURATION, Bindable.mapOf(String.class, String.class))
                    .ifBound(configuration -> configuration.forEach((key, value) -> {
                        if (AdminClientConfig.configNames().contains(key)) {
                            // The binder reads key/trust store locations as Spring resources; Kafka wants a path.
                            admin.put(key, key.endsWith(".location") && value.startsWith("file:")
                                    ? value.substring("file:".length()) : value);
                        }
                    }));
            int timeoutMs = (int) Math.min(Integer.MAX_VALUE, properties.adminTimeout().toMillis());
            admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeoutMs);
            admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, timeoutMs);
            return new TopicProvisioner(properties, admin);
        }

        @Bean
        AckFutures ripcordCancelAckFutures(CancelProperties properties) {
            return new AckFutures(Set.of(properties.topic(), properties.dltTopic()));
        }

        @Bean(destroyMethod = "close")
        KafkaSendQueue ripcordCancelSendQueue(StreamBridge bridge, AckFutures acks, TopicProvisioner topics,
                BindingServiceProperties bindings, CancelProperties properties,
                ObjectProvider<MeterRegistry> meters, ObjectProvider<Tracer> tracer,
                ObjectProvider<Propagator> propagator) {
            requireDestination(bindings, CancelBindings.OUTPUT, properties.topic());
            requireDestination(bindings, CancelBindings.DLT_OUTPUT, properties.dltTopic());
            return new KafkaSendQueue(new StreamBridgeRecordSender(bridge, acks, traceHeaders(tracer, propagator)),
                    properties.publishQueueCapacity(),
                    properties.publishMaxAttempts(), properties.publishRetryBackoff(), Duration.ofSeconds(5),
                    meters(meters));
        }

        @Bean
        @ConditionalOnMissingBean
        CancelPublisher cancelPublisher(KafkaSendQueue queue, CancelProperties properties, Environment environment,
                ObjectProvider<MeterRegistry> meters, ObjectProvider<Tracer> tracer,
                ObjectProvider<Propagator> propagator) {
            Origin origin = new Origin(environment.getProperty("spring.application.name", "ripcord"),
                    properties.instanceId());
            return new KafkaCancelPublisher(queue, origin, Clock.systemUTC(), meters(meters),
                    traceHeaders(tracer, propagator));
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(StreamBridge.class)
    @Conditional(OnKafkaPropagation.class)
    @ConditionalOnBooleanProperty("ripcord.cancel.consume")
    static final class ConsumerConfiguration {

        @Bean
        DeadLetterPublisher ripcordCancelDeadLetters(KafkaSendQueue queue, CancelProperties properties,
                ObjectProvider<MeterRegistry> meters) {
            return new DeadLetterPublisher(queue, properties.instanceId(), properties.dltTopic(), meters(meters));
        }

        @Bean(CancelBindings.CONSUMER_FUNCTION)
        Consumer<Message<?>> ripcordCancelConsumer(CancellationRegistry registry, DeadLetterPublisher deadLetters,
                TopicProvisioner topics, BindingServiceProperties bindings, CancelProperties properties,
                Environment environment, ObjectProvider<MeterRegistry> meters, ObjectProvider<Tracer> tracer,
                ObjectProvider<Propagator> propagator) {
            String definition = environment.getProperty("spring.cloud.function.definition", "");
            if (!Set.of(definition.split("[;|,]")).contains(CancelBindings.CONSUMER_FUNCTION)) {
                throw new IllegalStateException(("ripcord.cancel.consume=true but spring.cloud.function.definition='%s' "
                        + "does not name %s, so cancellations would never be consumed; add it, e.g. '%s;%s'")
                        .formatted(definition, CancelBindings.CONSUMER_FUNCTION,
                                definition.isBlank() ? "yourFunction" : definition, CancelBindings.CONSUMER_FUNCTION));
            }
            requireDestination(bindings, CancelBindings.INPUT, properties.topic());
            return new CancelEventConsumer(registry, deadLetters, meters(meters), traceHeaders(tracer, propagator));
        }

        @Bean
        ReplayWindowSeeker ripcordCancelReplayWindow(CancelProperties properties) {
            return new ReplayWindowSeeker(properties.topic(), properties.replayWindow(), Clock.systemUTC());
        }
    }

    private static void requireDestination(BindingServiceProperties bindings, String binding, String topic) {
        String destination = bindings.getBindingDestination(binding);
        if (!topic.equals(destination)) {
            throw new IllegalStateException(("binding %s points at '%s' but the ripcord.cancel topic is '%s': set the "
                    + "topic through ripcord.cancel.*, not spring.cloud.stream.bindings.%s.destination (or the "
                    + "application was not started through SpringApplication, so CancelBindingDefaults did not run)")
                    .formatted(binding, destination, topic, binding));
        }
    }
}
