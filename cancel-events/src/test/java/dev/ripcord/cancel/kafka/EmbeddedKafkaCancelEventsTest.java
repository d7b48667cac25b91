package dev.ripcord.cancel.kafka;

import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

/** The integration suite against spring-kafka-test's embedded broker (KRaft), started once for the class. */
@EmbeddedKafka
class EmbeddedKafkaCancelEventsTest extends AbstractCancelEventsKafkaTest {

    @Override
    protected String bootstrapServers() {
        return EmbeddedKafkaCondition.getBroker().getBrokersAsString();
    }
}
