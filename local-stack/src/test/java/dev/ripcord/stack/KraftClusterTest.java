package dev.ripcord.stack;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real three-node KRaft cluster in this JVM ({@link KraftBroker#start(int, int)}): the leader of a partition
 * replicated three times with {@code min.insync.replicas} 2 dies, and a producer with {@code acks=all}, idempotent
 * (what the services configure), goes on publishing; every record acknowledged before, during and after is read
 * back exactly once, in order, and the dead node, restarted on its data, is in sync again.
 */
class KraftClusterTest {

    private static final String TOPIC = "ripcord.cancellations";
    private static final Duration HANG_GUARD = Duration.ofSeconds(90);

    private static KraftBroker cluster;

    @BeforeAll
    static void startCluster() {
        cluster = KraftBroker.start(0, 3);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void killingAPartitionsLeaderLosesNoAcknowledgedRecordAndPublishesGoOn() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                cluster.bootstrapServers()))) {
            // As CancelTopics creates it with ripcord.cancel.replication-factor=3.
            admin.createTopics(List.of(new NewTopic(TOPIC, 3, (short) 3).configs(Map.of(
                    TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2")))).all().get(60, TimeUnit.SECONDS);
            // The controller acknowledges the creation before every broker has the topic in its metadata: the
            // broker that answers describeConfigs may not know it yet (UnknownTopicOrPartition), so ask until it does.
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            Config config = Awaitility.await().atMost(HANG_GUARD).ignoreExceptions()
                    .until(() -> admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS)
                            .values().iterator().next(), c -> c != null);
            assertThat(config.get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG).value()).isEqualTo("2");
        }
        Awaitility.await().atMost(HANG_GUARD).until(() -> cluster.inSyncReplicas(TOPIC, 0).size() == 3);

        List<String> acknowledged = new ArrayList<>();
        int leader;
        try (KafkaProducer<String, String> producer = producer()) {
            acknowledged.addAll(publish(producer, "before", 100));
            leader = cluster.leader(TOPIC, 0);
            assertThat(leader).isBetween(1, 3);

            cluster.kill(leader);
            assertThat(cluster.isRunning(leader)).isFalse();

            // Sent while the partition has no leader yet: the producer retries until the new leader takes them.
            acknowledged.addAll(publish(producer, "during", 100));
            int newLeader = cluster.leader(TOPIC, 0);
            assertThat(newLeader).isNotEqualTo(leader).isBetween(1, 3);
            assertThat(cluster.inSyncReplicas(TOPIC, 0)).doesNotContain(leader).hasSize(2);

            cluster.restart(leader);
            Awaitility.await().atMost(HANG_GUARD).until(() -> cluster.inSyncReplicas(TOPIC, 0).size() == 3);
            acknowledged.addAll(publish(producer, "after", 100));
        }

        assertThat(consumeAll(acknowledged.size())).as("every acknowledged record, once, in order")
                .containsExactlyElementsOf(acknowledged);
    }

    /** {@code n} records to partition 0, each acknowledged (acks=all) before the next is sent. */
    private static List<String> publish(KafkaProducer<String, String> producer, String phase, int n)
            throws Exception {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String value = phase + "-" + i;
            Future<RecordMetadata> ack = producer.send(new ProducerRecord<>(TOPIC, 0, value, value));
            RecordMetadata metadata = ack.get(60, TimeUnit.SECONDS);
            assertThat(metadata.partition()).isZero();
            values.add(value);
        }
        return values;
    }

    private static List<String> consumeAll(int expected) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config, new StringDeserializer(),
                new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.nanoTime() + HANG_GUARD.toNanos();
            while (values.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    values.add(r.value());
                }
            }
            // Anything beyond what was acknowledged (a duplicate) would be here too.
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                values.add(r.value());
            }
        }
        return values;
    }

    /** As the services' cancel producers: acks=all, idempotent. */
    private static KafkaProducer<String, String> producer() {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }
}
