package dev.ripcord.prefill.prefix;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixCacheEvent.Kind;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The prefill worker's cache events on a real (embedded KRaft) broker: keyed by the worker ID, in order, readable
 * by {@link PrefixCacheEvent#decode}, the producer configured as the service configures it.
 */
@EmbeddedKafka(topics = CacheEventsKafkaTest.TOPIC, partitions = 3)
class CacheEventsKafkaTest {

    static final String TOPIC = "prefix-cache-publish";

    @Test
    void aWorkersEventsReachTheTopicKeyedByItsIdInOrder() {
        String brokers = EmbeddedKafkaCondition.getBroker().getBrokersAsString();
        org.springframework.mock.env.MockEnvironment environment = new org.springframework.mock.env.MockEnvironment()
                .withProperty("spring.cloud.stream.kafka.binder.brokers", brokers);
        Map<String, Object> config = CacheEventsConfiguration.producerConfig(
                new org.springframework.beans.factory.support.StaticListableBeanFactory()
                        .getBeanProvider(org.springframework.boot.kafka.autoconfigure.KafkaProperties.class),
                environment);
        assertThat(config).containsEntry("bootstrap.servers", brokers).containsEntry("acks", "all");
        KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer());
        try (CacheEventPublisher publisher = new CacheEventPublisher(64, 64,
                new CacheEventsConfiguration.KafkaSink(producer, TOPIC), new SimpleMeterRegistry())) {
            publisher.start("127.0.0.1:18081");
            publisher.stored(new long[] {5, 6, 7});
            publisher.removed(new long[] {7});
        }
        List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of("bootstrap.servers", brokers),
                new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(TOPIC).stream()
                    .map(p -> new TopicPartition(TOPIC, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (records.size() < 3 && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            }
        }
        assertThat(records).hasSize(3).allSatisfy(r -> assertThat(r.key()).isEqualTo("127.0.0.1:18081"));
        assertThat(records.stream().map(ConsumerRecord::partition).distinct()).as("one worker, one partition")
                .hasSize(1);
        List<PrefixCacheEvent> events = records.stream().map(r -> PrefixCacheEvent.decode(r.value())).toList();
        assertThat(events).extracting(PrefixCacheEvent::kind).containsExactly(Kind.CLEARED, Kind.STORED, Kind.REMOVED);
        assertThat(events).extracting(PrefixCacheEvent::seq).containsExactly(1L, 2L, 3L);
        assertThat(events.get(1).keys()).containsExactly(5, 6, 7);
    }
}
