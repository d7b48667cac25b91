package dev.ripcord.prefill.prefix;

import dev.ripcord.engine.PrefixCacheListener;
import dev.ripcord.worker.EngineProperties;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/** When the prefill worker has a cache-event publisher, and what it names itself. */
class CacheEventsConfigurationTest {

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties(EngineProperties.class)
    static class Base {
        @Bean
        MeterRegistry meters() {
            return new SimpleMeterRegistry();
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withUserConfiguration(Base.class, CacheEventsConfiguration.class)
            .withPropertyValues("spring.kafka.bootstrap-servers=127.0.0.1:1");

    @Test
    void withKafkaTheListenerIsThePublisherAndTheTopicIsDeclared() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(PrefixCacheListener.class);
            assertThat(context.getBean(PrefixCacheListener.class)).isInstanceOf(CacheEventPublisher.class);
            assertThat(context.getBean(NewTopic.class).name()).isEqualTo("ripcord.prefix-cache");
        });
    }

    @Test
    void withoutKafkaOrWhenTurnedOffThereIsNoListener() {
        runner.withPropertyValues("ripcord.cancel.propagation=in-band")
                .run(context -> assertThat(context).doesNotHaveBean(PrefixCacheListener.class));
        runner.withPropertyValues("ripcord.prefill.cache-events.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(PrefixCacheListener.class));
    }

    @Test
    void theWorkerIdIsTheConfiguredOneOrThisHostAndTheServersPort() {
        CacheEventsProperties given = new CacheEventsProperties(true, "t", 3, 1, java.time.Duration.ofDays(1), 10,
                "prefill-0.prefill:8081");
        assertThat(CacheEventsConfiguration.workerId(given, new MockEnvironment(), 1234))
                .isEqualTo("prefill-0.prefill:8081");
        CacheEventsProperties unset = new CacheEventsProperties(true, "t", 3, 1, java.time.Duration.ofDays(1), 10, "");
        assertThat(CacheEventsConfiguration.workerId(unset,
                new MockEnvironment().withProperty("server.address", "10.1.2.3"), 8081)).isEqualTo("10.1.2.3:8081");
        assertThat(CacheEventsConfiguration.workerId(unset, new MockEnvironment(), 8081)).endsWith(":8081");
    }
}
