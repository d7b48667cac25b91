package dev.ripcord.cancel.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.cancel.CancellationRegistry;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The auto-configuration's decisions that need no broker: properties, defaults, validation, and what gets wired when
 * Kafka propagation is off. (With Kafka on, the integration tests start real contexts.)
 */
class CancelAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CancelAutoConfiguration.class));

    @Test
    void defaultsWorkOnALaptop() {
        runner.withPropertyValues("ripcord.cancel.propagation=none").run(context -> {
            CancelProperties p = context.getBean(CancelProperties.class);
            assertThat(p.consume()).isFalse();
            assertThat(p.topic()).isEqualTo("ripcord.cancellations");
            assertThat(p.dltTopic()).isEqualTo("ripcord.cancellations.dlt");
            assertThat(p.partitions()).isEqualTo(3);
            assertThat(p.replicationFactor()).isEqualTo(1);
            assertThat(p.retention()).isEqualTo(Duration.ofHours(1));
            assertThat(p.replayWindow()).isEqualTo(Duration.ofMinutes(10));
            assertThat(p.tombstoneTtl()).isEqualTo(Duration.ofMinutes(10));
            assertThat(p.tombstoneMaxSize()).isEqualTo(100_000);
            assertThat(p.instanceId()).isNotBlank();
        });
    }

    @Test
    void propagationIsBothByDefaultAndAcceptsTheDocumentedSpellings() {
        runner.withPropertyValues("ripcord.cancel.provision-topics=false", "ripcord.cancel.propagation=in-band")
                .run(context -> {
                    CancelPropagation p = context.getBean(CancelProperties.class).propagation();
                    assertThat(p).isEqualTo(CancelPropagation.IN_BAND);
                    assertThat(p.inBand()).isTrue();
                    assertThat(p.kafka()).isFalse();
                });
        assertThat(new CancelProperties(null, false, "t", "d", 1, 1, Duration.ofHours(1), Duration.ofHours(1),
                Duration.ZERO, Duration.ofMinutes(1), 1, false, Duration.ofSeconds(1), 1, 1, Duration.ofMillis(1), null)
                .instanceId()).isNotBlank();
        assertThat(CancelPropagation.BOTH.inBand() && CancelPropagation.BOTH.kafka()).isTrue();
        assertThat(CancelPropagation.NONE.inBand() || CancelPropagation.NONE.kafka()).isFalse();
    }

    @Test
    void withoutKafkaPropagationThereIsARegistryAndADiscardingPublisherButNoKafkaClient() {
        runner.withPropertyValues("ripcord.cancel.propagation=in-band", "ripcord.cancel.consume=true",
                "ripcord.cancel.tombstone-max-size=7").run(context -> {
                    assertThat(context).hasSingleBean(CancellationRegistry.class);
                    assertThat(context).doesNotHaveBean(NewTopic.class);
                    assertThat(context).doesNotHaveBean(KafkaSendQueue.class);
                    assertThat(context).doesNotHaveBean(CancelEventConsumer.class);
                    CancelPublisher publisher = context.getBean(CancelPublisher.class);
                    assertThat(publisher.publish("req-1", CancelReason.CLIENT_CANCEL)).isCompleted();
                });
    }

    @Test
    void aServiceMayProvideItsOwnRegistry() {
        CancellationRegistry own = new CancellationRegistry();
        runner.withPropertyValues("ripcord.cancel.propagation=none")
                .withBean(CancellationRegistry.class, () -> own)
                .run(context -> assertThat(context.getBean(CancellationRegistry.class)).isSameAs(own));
    }

    @Test
    void invalidPropertiesFailStartupNamingTheProperty() {
        runner.withPropertyValues("ripcord.cancel.propagation=none", "ripcord.cancel.partitions=0")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("ripcord.cancel")
                        .hasStackTraceContaining("partitions"));
        runner.withPropertyValues("ripcord.cancel.propagation=none", "ripcord.cancel.topic=not a topic")
                .run(context -> assertThat(context).hasFailed());
        runner.withPropertyValues("ripcord.cancel.propagation=none", "ripcord.cancel.tombstone-ttl=0s")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("tombstone-ttl must be positive"));
    }

    @Test
    void aReplayWindowLongerThanRetentionIsRejected() {
        runner.withPropertyValues("ripcord.cancel.propagation=none", "ripcord.cancel.retention=5m",
                "ripcord.cancel.replay-window=10m")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("replay-window (PT10M) must be between 0 and ripcord.cancel.retention"));
    }
}
