package dev.ripcord.gateway.observability;

import dev.ripcord.gateway.serving.DisaggregatedGenerator;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
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
 * Here: the serving core's generator is wrapped in a {@link MeteredTokenGenerator} (TTFT and tokens). A post-processor
 * rather than an edit of the serving configuration, so test contexts with generators of their own are left alone.
 */
@Configuration(proxyBeanMethods = false)
public class ObservabilityConfiguration {

    @Bean
    static BeanPostProcessor meteredTokenGenerator(ObjectProvider<MeterRegistry> meters) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof DisaggregatedGenerator generator) {
                    return new MeteredTokenGenerator(generator, meters.getObject());
                }
                return bean;
            }
        };
    }
}
