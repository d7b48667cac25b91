package dev.ripcord.cancel.kafka;

import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.KafkaContainer;

/**
 * The integration suite against a real Apache Kafka in a container. Reported as skipped, not failed, where no Docker
 * engine runs.
 */
@Testcontainers(disabledWithoutDocker = true)
class ContainerKafkaCancelEventsTest extends AbstractCancelEventsKafkaTest {

    @Container
    static final KafkaContainer KAFKA = new KafkaContainer("apache/kafka:4.1.2");

    @Override
    protected String bootstrapServers() {
        return KAFKA.getBootstrapServers();
    }
}
