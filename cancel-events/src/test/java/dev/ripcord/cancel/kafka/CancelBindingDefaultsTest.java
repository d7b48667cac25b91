package dev.ripcord.cancel.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

class CancelBindingDefaultsTest {

    private final CancelBindingDefaults defaults = new CancelBindingDefaults();

    private StandardEnvironment environment(Map<String, Object> properties) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addFirst(new MapPropertySource("test", properties));
        defaults.postProcessEnvironment(environment, new SpringApplication());
        return environment;
    }

    @Test
    void aConsumingServiceGetsTheConsumerFunctionAndABroadcastGroup() {
        StandardEnvironment env = environment(Map.of("ripcord.cancel.consume", "true",
                "spring.application.name", "decode", "ripcord.cancel.instance-id", "pod-7"));

        assertThat(env.getProperty("spring.cloud.function.definition")).isEqualTo("ripcordCancelConsumer");
        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancelConsumer-in-0.destination"))
                .isEqualTo("ripcord.cancellations");
        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancelConsumer-in-0.group"))
                .isEqualTo("ripcord-cancel.decode.pod-7");
        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancelConsumer-in-0.consumer.max-attempts"))
                .isEqualTo("1");
    }

    @Test
    void aPublishOnlyServiceGetsNoFunctionDefinition() {
        StandardEnvironment env = environment(Map.of());

        assertThat(env.getProperty("spring.cloud.function.definition")).isNull();
        // Nor may the binder bind some other Function bean it finds (a NettyServerCustomizer is one) to Kafka.
        assertThat(env.getProperty("spring.cloud.stream.function.autodetect")).isEqualTo("false");
        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancel-out-0.destination"))
                .isEqualTo("ripcord.cancellations");
    }

    @Test
    void noFunctionDefinitionWhenPropagationExcludesKafka() {
        StandardEnvironment env = environment(Map.of("ripcord.cancel.consume", "true",
                "ripcord.cancel.propagation", "in-band"));

        assertThat(env.getProperty("spring.cloud.function.definition")).isNull();
    }

    @Test
    void topicNamesAndBrokersFollowTheRipcordAndSpringKafkaProperties() {
        StandardEnvironment env = environment(Map.of("ripcord.cancel.topic", "my.cancels",
                "ripcord.cancel.dlt-topic", "my.cancels.dead", "spring.kafka.bootstrap-servers", "kafka:9093"));

        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancel-out-0.destination"))
                .isEqualTo("my.cancels");
        assertThat(env.getProperty("spring.cloud.stream.bindings.ripcordCancelDlt-out-0.destination"))
                .isEqualTo("my.cancels.dead");
        assertThat(env.getProperty("spring.cloud.stream.kafka.binder.brokers")).isEqualTo("kafka:9093");
    }

    @Test
    void theServiceCanOverrideAnyDefault() {
        StandardEnvironment env = environment(Map.of("ripcord.cancel.consume", "true",
                "spring.cloud.function.definition", "mine;ripcordCancelConsumer",
                "spring.cloud.stream.kafka.bindings.ripcordCancel-out-0.producer.configuration.linger.ms", "2"));

        assertThat(env.getProperty("spring.cloud.function.definition")).isEqualTo("mine;ripcordCancelConsumer");
        assertThat(env.getProperty(
                "spring.cloud.stream.kafka.bindings.ripcordCancel-out-0.producer.configuration.linger.ms"))
                .isEqualTo("2");
    }

    @Test
    void theCancelProducerSendsEachRecordAtOnceUncompressedAndKeepsItsTopicMetadataThroughQuietSpells() {
        StandardEnvironment env = environment(Map.of());

        for (String output : new String[] {"ripcordCancel-out-0", "ripcordCancelDlt-out-0"}) {
            String producer = "spring.cloud.stream.kafka.bindings." + output + ".producer.configuration.";
            assertThat(env.getProperty(producer + "linger.ms")).as(output).isEqualTo("0");
            assertThat(env.getProperty(producer + "compression.type")).as(output).isEqualTo("none");
            assertThat(env.getProperty(producer + "acks")).as(output).isEqualTo("all");
            // Kafka's default (5 min) would drop the topic's metadata between rare cancels.
            assertThat(env.getProperty(producer + "metadata.max.idle.ms", Long.class)).as(output)
                    .isEqualTo(CancelBindingDefaults.PRODUCER_METADATA_MAX_IDLE_MS)
                    .isGreaterThan(300_000L);
        }
    }

    @Test
    void theCancelConsumerLongPollsSoAFetchReturnsAsSoonAsOneRecordIsThere() {
        StandardEnvironment env = environment(Map.of("ripcord.cancel.consume", "true"));
        String consumer = "spring.cloud.stream.kafka.bindings.ripcordCancelConsumer-in-0.consumer.configuration.";

        assertThat(env.getProperty(consumer + "fetch.min.bytes")).isEqualTo("1");
        assertThat(env.getProperty(consumer + "fetch.max.wait.ms")).isEqualTo("500");
    }

    @Test
    void aServiceCanOverrideTheLatencySettings() {
        String consumer = "spring.cloud.stream.kafka.bindings.ripcordCancelConsumer-in-0.consumer.configuration.";
        String producer = "spring.cloud.stream.kafka.bindings.ripcordCancel-out-0.producer.configuration.";
        StandardEnvironment env = environment(Map.of(consumer + "fetch.max.wait.ms", "50",
                producer + "compression.type", "lz4"));

        assertThat(env.getProperty(consumer + "fetch.max.wait.ms")).isEqualTo("50");
        assertThat(env.getProperty(producer + "compression.type")).isEqualTo("lz4");
    }

    @Test
    void thePublishOnlyServiceBindsTheCancelOutputAtStartupSoItsFirstCancelFindsTheProducerReady() {
        StandardEnvironment gateway = environment(Map.of("ripcord.cancel.consume", "false"));
        StandardEnvironment worker = environment(Map.of("ripcord.cancel.consume", "true"));
        StandardEnvironment inBand = environment(Map.of("ripcord.cancel.propagation", "in-band"));

        // The channel StreamBridge looks up by the binding's name, so the name must be the full binding name.
        assertThat(gateway.getProperty("spring.cloud.stream.output-bindings")).isEqualTo("ripcordCancel-out-0");
        assertThat(worker.getProperty("spring.cloud.stream.output-bindings")).isNull();
        assertThat(inBand.getProperty("spring.cloud.stream.output-bindings")).isNull();
    }

    @Test
    void aRandomInstanceIdIsFixedOncePerEnvironment() {
        StandardEnvironment env = environment(Map.of());
        String id = env.getProperty("ripcord.cancel.instance-id");

        defaults.postProcessEnvironment(env, new SpringApplication());

        assertThat(id).hasSize(12);
        assertThat(env.getProperty("ripcord.cancel.instance-id")).isEqualTo(id);
        assertThat(environment(Map.of()).getProperty("ripcord.cancel.instance-id")).isNotEqualTo(id);
    }
}
