package dev.ripcord.gateway.resilience;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The gateway's Resilience4j registries, built from {@code ripcord.gateway.resilience.*}. {@link WorkerResilience}
 * is a {@code MeterBinder}, so Spring Boot binds its breaker, bulkhead and retry metrics to the meter registry.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ResilienceProperties.class)
public class ResilienceConfiguration {

    @Bean
    WorkerResilience workerResilience(ResilienceProperties properties) {
        return new WorkerResilience(properties);
    }
}
