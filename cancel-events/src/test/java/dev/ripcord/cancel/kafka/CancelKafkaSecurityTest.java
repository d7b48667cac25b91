package dev.ripcord.cancel.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.StaticListableBeanFactory;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaConnectionDetails;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.cloud.stream.binder.kafka.properties.KafkaBinderConfigurationProperties;
import org.springframework.mock.env.MockEnvironment;

/**
 * Kafka security (docs/security.md) reaches every Kafka client a service creates for cancellations: the binder's
 * producers (cancel events, dead letters) and consumer (the replay seeker works on it), and the topic provisioner's
 * admin client. Checked on the effective client configuration each is built from; no broker needed.
 */
class CancelKafkaSecurityTest {

    private static final String JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required "
            + "username=\"ripcord\" password=\"secret\";";

    /** The documented way: once, under spring.kafka.*. */
    private static MockEnvironment springKafkaSecurity() {
        return new MockEnvironment()
                .withProperty("spring.kafka.bootstrap-servers", "kafka-1:9093")
                .withProperty("spring.kafka.security.protocol", "SASL_SSL")
                .withProperty("spring.kafka.ssl.trust-store-location", "file:/etc/ripcord/kafka-truststore.p12")
                .withProperty("spring.kafka.ssl.trust-store-password", "changeit")
                .withProperty("spring.kafka.ssl.trust-store-type", "PKCS12")
                .withProperty("spring.kafka.properties.sasl.mechanism", "SCRAM-SHA-512")
                .withProperty("spring.kafka.properties.sasl.jaas.config", JAAS);
    }

    /** The binder's own place for client settings (store locations are Spring resources there: file:...). */
    private static MockEnvironment binderSecurity(Path truststore) {
        return new MockEnvironment()
                .withProperty("spring.cloud.stream.kafka.binder.brokers", "kafka-1:9093")
                .withProperty(CancelAutoConfiguration.BINDER_CONFIGURATION + ".security.protocol", "SASL_SSL")
                .withProperty(CancelAutoConfiguration.BINDER_CONFIGURATION + ".sasl.mechanism", "SCRAM-SHA-512")
                .withProperty(CancelAutoConfiguration.BINDER_CONFIGURATION + ".sasl.jaas.config", JAAS)
                .withProperty(CancelAutoConfiguration.BINDER_CONFIGURATION + ".ssl.truststore.location",
                        "file:" + truststore);
    }

    @Test
    void securityUnderSpringKafkaReachesTheProvisionersAdminAndTheBindersProducersAndConsumer() {
        MockEnvironment env = springKafkaSecurity();
        for (Map<String, Object> client : clients(env)) {
            assertThat(client).containsEntry("security.protocol", "SASL_SSL")
                    .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                    .containsEntry("sasl.jaas.config", JAAS)
                    .containsEntry("ssl.truststore.type", "PKCS12")
                    .containsKey("ssl.truststore.location");
            assertThat(String.valueOf(client.get("ssl.truststore.location"))).endsWith("kafka-truststore.p12");
        }
    }

    @Test
    void securityGivenOnlyToTheBinderReachesTheProvisionersAdminToo(@TempDir Path dir) throws Exception {
        Path truststore = Files.write(dir.resolve("kafka-truststore.p12"), new byte[] {1, 2, 3});
        List<Map<String, Object>> clients = clients(binderSecurity(truststore));
        for (Map<String, Object> client : clients) {
            assertThat(client).containsEntry("security.protocol", "SASL_SSL")
                    .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                    .containsEntry("sasl.jaas.config", JAAS);
            assertThat(String.valueOf(client.get("ssl.truststore.location"))).endsWith("kafka-truststore.p12");
        }
        // The binder resolves file: resources itself; a plain Admin client needs the path.
        assertThat(clients.getFirst()).as("the provisioner's admin reads the store where it is")
                .containsEntry("ssl.truststore.location", truststore.toString());
    }

    @Test
    void withoutSecuritySettingsNoClientAsksForAny() {
        MockEnvironment env = new MockEnvironment().withProperty("spring.kafka.bootstrap-servers", "localhost:9092");
        for (Map<String, Object> client : clients(env)) {
            assertThat(client).doesNotContainKeys("sasl.mechanism", "sasl.jaas.config");
            assertThat(client.getOrDefault("security.protocol", "PLAINTEXT")).isEqualTo("PLAINTEXT");
        }
    }

    /** The topic admin's config, then the binder's merged producer and consumer configs, for {@code env}. */
    private static List<Map<String, Object>> clients(MockEnvironment env) {
        KafkaProperties kafka = Binder.get(env).bind("spring.kafka", KafkaProperties.class)
                .orElseGet(KafkaProperties::new);
        StaticListableBeanFactory beans = new StaticListableBeanFactory(Map.of("kafkaProperties", kafka));
        CancelProperties cancel = Binder.get(new MockEnvironment()).bindOrCreate("ripcord.cancel",
                CancelProperties.class);
        KafkaAdmin admin = new CancelAutoConfiguration.KafkaPropagationConfiguration()
                .kafkaAdmin(cancel, beans.getBeanProvider(KafkaProperties.class), env);

        ObjectProvider<KafkaConnectionDetails> noDetails = new StaticListableBeanFactory()
                .getBeanProvider(KafkaConnectionDetails.class);
        KafkaBinderConfigurationProperties binder = new KafkaBinderConfigurationProperties(kafka, noDetails);
        Binder.get(env).bind("spring.cloud.stream.kafka.binder", Bindable.ofInstance(binder));
        return List.of(admin.getConfigurationProperties(), binder.mergedProducerConfiguration(),
                binder.mergedConsumerConfiguration());
    }
}
