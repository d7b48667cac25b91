package dev.ripcord.deploy;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docker-compose.kafka-cluster.yml, the override that turns compose's single broker into a three-node KRaft cluster:
 * one cluster of three voters, every service bootstrapping on every node, and the topics created as the services
 * create them with replication factor 3 (min.insync.replicas 2).
 */
class KafkaClusterComposeTest {

    private static final List<String> NODES = List.of("kafka", "kafka-2", "kafka-3");
    private static final List<String> RIPCORD = List.of("gateway", "prefill", "decode");

    private final Map<String, Object> base = Yaml.map(Yaml.document(Repo.path("docker-compose.yml")).get("services"));
    private final Map<String, Object> override =
            Yaml.map(Yaml.document(Repo.path("docker-compose.kafka-cluster.yml")).get("services"));

    private Map<String, Object> environment(String service) {
        return Yaml.map(Yaml.map(override.get(service)).get("environment"));
    }

    @Test
    void threeNodesFormOneClusterOfThreeVotersReplicatingThreeTimes() {
        Set<String> clusterIds = new LinkedHashSet<>();
        Set<String> nodeIds = new LinkedHashSet<>();
        for (String node : NODES) {
            Map<String, Object> env = environment(node);
            clusterIds.add(String.valueOf(env.get("CLUSTER_ID")));
            nodeIds.add(String.valueOf(env.get("KAFKA_NODE_ID")));
            assertThat(env.get("KAFKA_CONTROLLER_QUORUM_VOTERS")).isEqualTo("1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093");
            assertThat(env.get("KAFKA_PROCESS_ROLES")).isEqualTo("broker,controller");
            assertThat(env.get("KAFKA_DEFAULT_REPLICATION_FACTOR")).isEqualTo("3");
            assertThat(env.get("KAFKA_MIN_INSYNC_REPLICAS")).isEqualTo("2");
            assertThat(env.get("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR")).isEqualTo("3");
            assertThat(String.valueOf(env.get("KAFKA_ADVERTISED_LISTENERS"))).contains("INTERNAL://" + node + ":29092");
        }
        assertThat(clusterIds).hasSize(1).doesNotContain("null");
        assertThat(nodeIds).containsExactly("1", "2", "3");
        assertThat(base).containsKey("kafka").doesNotContainKeys("kafka-2", "kafka-3");
    }

    @Test
    void everyServiceBootstrapsOnEveryNodeAndReplicatesItsTopicsThreeTimes() {
        for (String service : RIPCORD) {
            assertThat(base).containsKey(service);
            Map<String, Object> env = environment(service);
            assertThat(env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS")).isEqualTo("kafka:29092,kafka-2:29092,kafka-3:29092");
            assertThat(env.get("SPRING_CLOUD_STREAM_KAFKA_BINDER_BROKERS")).isEqualTo(
                    env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS"));
            assertThat(env.get("RIPCORD_CANCEL_REPLICATION_FACTOR")).isEqualTo("3");
            assertThat(env.get("RIPCORD_LIFECYCLE_REPLICATION_FACTOR")).isEqualTo("3");
        }
    }

    @Test
    void kafkaInitCreatesTheTopicsAsTheServicesWouldWithThreeReplicas() {
        String script = String.join(" ", Yaml.list(Yaml.map(override.get("kafka-init")).get("command")).stream()
                .map(String::valueOf).toList());
        Map<String, TopicSpec> created = TopicSpec.createdBy(script, 3);
        assertThat(created).isEqualTo(TopicSpec.asTheServicesCreateThem(3));
        assertThat(created.values()).allSatisfy(spec ->
                assertThat(spec.config()).containsEntry("min.insync.replicas", "2"));
    }
}
