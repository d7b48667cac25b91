package dev.ripcord.cancel.kafka;

import org.junit.jupiter.api.condition.EnabledIf;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.KafkaContainer;

/**
 * The integration suite against a real Apache Kafka in a container. Where no Docker engine runs it is reported as
 * skipped, not failed, with a reason that says what did not run and what still did (the same suite against the
 * embedded KRaft broker, {@link EmbeddedKafkaCancelEventsTest}); {@code NoSilentSkipsTest} (deployment-tests) keeps
 * every skip in the build that explicit.
 */
@EnabledIf(value = "dockerAvailable", disabledReason = ContainerKafkaCancelEventsTest.NO_DOCKER)
@Testcontainers
class ContainerKafkaCancelEventsTest extends AbstractCancelEventsKafkaTest {

    static final String NO_DOCKER = "SKIPPED: no Docker engine reachable, so the cancel-events suite against a real"
            + " apache/kafka container did not run (the same suite ran against the embedded KRaft broker:"
            + " EmbeddedKafkaCancelEventsTest)";

    @Container
    static final KafkaContainer KAFKA = new KafkaContainer("apache/kafka:4.1.2");

    static boolean dockerAvailable() {
        return DockerClientFactory.instance().isDockerAvailable();
    }

    @Override
    protected String bootstrapServers() {
        return KAFKA.getBootstrapServers();
    }
}
