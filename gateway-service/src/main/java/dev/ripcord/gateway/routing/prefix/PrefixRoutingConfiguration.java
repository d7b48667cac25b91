package dev.ripcord.gateway.routing.prefix;

import java.util.Map;

import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.model.ModelProperties;
import dev.ripcord.gateway.relay.CancelRelayConfiguration;
import dev.ripcord.gateway.routing.RoutingPolicy;
import dev.ripcord.gateway.routing.WorkerPool;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Cache-aware routing: the {@link PrefixIndex}, fed by a {@link PrefixCacheConsumer} when the policy is
 * {@code cache-aware} and the gateway has Kafka ({@code ripcord.cancel.propagation} {@code both} or {@code kafka}),
 * and the {@link PrefixRouting} the serving core asks for each prompt's affinity. Without Kafka the index stays
 * empty and prefill is routed by load alone.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(RoutingProperties.class)
public class PrefixRoutingConfiguration {

    @Bean
    PrefixIndex prefixIndex(WorkerPool prefillPool) {
        PrefixIndex index = new PrefixIndex();
        prefillPool.onLeave(instance -> index.forget(instance.authority())); // a worker that left: its pages too
        return index;
    }

    @Bean(destroyMethod = "close")
    PrefixCacheConsumerHolder prefixCacheConsumer(PrefixIndex index, RoutingProperties routing,
                                                  CancelProperties cancel, ObjectProvider<KafkaProperties> kafka,
                                                  Environment environment, MeterRegistry meters) {
        if (routing.policy() != RoutingPolicy.CACHE_AWARE || !cancel.propagation().kafka()) {
            return new PrefixCacheConsumerHolder(null);
        }
        Map<String, Object> consumer = CancelRelayConfiguration.clientConfig(
                kafka.getIfAvailable(KafkaProperties::new).buildConsumerProperties(), environment);
        consumer.put(ConsumerConfig.CLIENT_ID_CONFIG, "ripcord-prefix-cache-index-" + cancel.instanceId());
        return new PrefixCacheConsumerHolder(new PrefixCacheConsumer(index, routing.cacheEventsTopic(), consumer,
                meters));
    }

    @Bean
    PrefixRouting prefixRouting(PrefixIndex index, RoutingProperties routing,
                                ObjectProvider<ModelProperties> model) {
        ModelProperties served = model.getIfAvailable();
        String identity = routing.policy() == RoutingPolicy.CACHE_AWARE && served != null ? served.identity() : null;
        return new PrefixRouting(index, identity, routing.overlapWeight());
    }

    /** The consumer, or none (another policy, or no Kafka): a bean may not be null. */
    public record PrefixCacheConsumerHolder(PrefixCacheConsumer consumer) implements AutoCloseable {
        @Override
        public void close() {
            if (consumer != null) {
                consumer.close();
            }
        }
    }
}
