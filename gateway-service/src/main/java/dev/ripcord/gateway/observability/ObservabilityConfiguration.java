package dev.ripcord.gateway.observability;

import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.gateway.generation.WarmUp;
import dev.ripcord.gateway.serving.DisaggregatedGenerator;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The gateway's observability wiring. What is not here, because Boot does it from configuration:
 * <ul>
 *   <li>the request ID in the MDC: {@code openai.RequestIdFilter}, first of the filters, writes it into the Reactor
 *       context of the whole exchange, and
 *       {@code spring.reactor.context-propagation=auto} with the library's
 *       {@link dev.ripcord.cancel.logging.RequestIdThreadLocalAccessor} restores it on every thread hop;</li>
 *   <li>tracing: Boot's Brave auto-configuration (W3C propagation), the server observation of every HTTP exchange,
 *       and the observation customizer of the auto-configured {@code WebClient.Builder} from which the internal
 *       client is built, so each call to a worker carries {@code traceparent} (contract C3).</li>
 * </ul>
 * Here: the request metrics with vLLM's names ({@link ServingMetrics}), fed by the serving core's generator wrapped
 * in a {@link MeteredTokenGenerator} (token timing) and by the OpenAI edge (each request's outcome: ServingMetrics is
 * the edge's {@link dev.ripcord.gateway.generation.RequestOutcome.Listener}); and {@code model_name} on every
 * {@code ripcord.*} meter. A post-processor rather than an edit of the serving configuration, so test contexts with
 * generators of their own are left alone.
 */
@Configuration(proxyBeanMethods = false)
public class ObservabilityConfiguration {

    @Bean
    ServingMetrics servingMetrics(MeterRegistry meters, TextCodec codec) {
        return new ServingMetrics(meters, codec.contextLength());
    }

    /** Warm-up traffic kept out of the user's figures, where the launcher that sends it asks for it. */
    @Bean
    @ConditionalOnProperty(name = WarmUp.ENABLED, havingValue = "true")
    WarmUpFilter warmUpFilter() {
        return new WarmUpFilter();
    }

    @Bean
    static BeanPostProcessor meteredTokenGenerator(ObjectProvider<ServingMetrics> metrics,
            ObjectProvider<MeterRegistry> meters) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof DisaggregatedGenerator generator) {
                    return new MeteredTokenGenerator(generator, metrics.getObject(), meters.getObject());
                }
                return bean;
            }
        };
    }

    /**
     * {@code model_name} on every {@code ripcord.*} meter, as vLLM labels its metrics: the served model's id as
     * clients send it (the gateway serves one model and refuses requests for others, so one value per process).
     */
    @Bean
    static MeterFilter modelNameTag(ObjectProvider<TextCodec> codec) {
        return modelNameTag(() -> codec.getObject().modelName());
    }

    /**
     * See {@link #modelNameTag(ObjectProvider)}. The name is asked for when the first {@code ripcord.*} meter is
     * registered (not when the registry is configured, before the model is known), then kept.
     */
    static MeterFilter modelNameTag(java.util.function.Supplier<String> modelName) {
        return new MeterFilter() {
            private volatile String name;

            @Override
            public Meter.Id map(Meter.Id id) {
                if (id.getName().startsWith("ripcord.") && id.getTag("model_name") == null) {
                    String value = name;
                    if (value == null) {
                        value = modelName.get();
                        name = value;
                    }
                    return id.withTag(Tag.of("model_name", value));
                }
                return id;
            }
        };
    }
}
