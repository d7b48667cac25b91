package dev.ripcord.deploy;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docker-compose.kafka-cluster.yml, the override that turns compose's single broker into a three-node KRaft cluster:
 * one cluster of three voters, every service bootstrapping on every node, the topics created as the services
 * create them with replication factor 3 (min.insync.replicas 2), SASL/SCRAM-SHA-512 on every listener, and each
 * service's ACLs exactly what it needs.
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
        Map<String, TopicSpec> created = TopicSpec.createdBy(kafkaInit(), 3);
        assertThat(created).isEqualTo(TopicSpec.asTheServicesCreateThem(3));
        assertThat(created.values()).allSatisfy(spec ->
                assertThat(spec.config()).containsEntry("min.insync.replicas", "2"));
    }

    private String kafkaInit() {
        return String.join(" ", Yaml.list(Yaml.map(override.get("kafka-init")).get("command")).stream()
                .map(String::valueOf).toList());
    }

    @Test
    void everyListenerAuthenticatesAndNoAclMeansNoAccess() {
        for (String node : NODES) {
            Map<String, Object> env = environment(node);
            for (String listener : String.valueOf(env.get("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP")).split(",")) {
                assertThat(listener).as("%s: listener %s", node, listener).matches("[A-Z]+:SASL_(PLAINTEXT|SSL)");
            }
            assertThat(env.get("KAFKA_SASL_ENABLED_MECHANISMS")).isEqualTo("SCRAM-SHA-512");
            assertThat(env.get("KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL")).isEqualTo("SCRAM-SHA-512");
            assertThat(env.get("KAFKA_LISTENER_NAME_CONTROLLER_SASL_ENABLED_MECHANISMS")).isEqualTo("PLAIN");
            assertThat(env.get("KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL")).isEqualTo("PLAIN");
            assertThat(env.get("KAFKA_AUTHORIZER_CLASS_NAME"))
                    .isEqualTo("org.apache.kafka.metadata.authorizer.StandardAuthorizer");
            assertThat(env.get("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND")).isEqualTo("false");
            assertThat(env.get("KAFKA_SUPER_USERS")).isEqualTo("User:ripcord-broker;User:ripcord-admin");
            assertThat(String.valueOf(env.get("KAFKA_OPTS")))
                    .contains("-Djava.security.auth.login.config=/opt/kafka/config/kafka_server_jaas.conf");

            // The node's storage is formatted with every SCRAM user before the image's own start.
            String start = String.join(" ", Yaml.list(Yaml.map(override.get(node)).get("command")).stream()
                    .map(String::valueOf).toList());
            assertThat(start).contains("/opt/kafka/config/kafka_server_jaas.conf", "kafka-storage.sh format",
                    "--ignore-formatted", "exec /etc/kafka/docker/run");
            assertThat(start.indexOf("kafka-storage.sh format")).isLessThan(start.indexOf("/etc/kafka/docker/run"));
            Set<String> users = new LinkedHashSet<>();
            Matcher scram = Pattern.compile("--add-scram \"SCRAM-SHA-512=\\[name=([a-z-]+),password=\\$\\$(RIPCORD_KAFKA_[A-Z]+_PASSWORD)]\"")
                    .matcher(start);
            while (scram.find()) {
                users.add(scram.group(1));
                assertThat(scram.group(2)).isEqualTo("RIPCORD_KAFKA_"
                        + scram.group(1).substring("ripcord-".length()).toUpperCase() + "_PASSWORD");
                assertThat(String.valueOf(env.get(scram.group(2)))).as("%s: %s from .env", node, scram.group(2))
                        .startsWith("${" + scram.group(2) + ":?");
            }
            Set<String> expected = new LinkedHashSet<>(List.of("ripcord-broker", "ripcord-admin"));
            KafkaAcl.SERVICES.forEach(s -> expected.add(KafkaAcl.user(s)));
            assertThat(users).as("%s: SCRAM users", node).isEqualTo(expected);
        }
    }

    @Test
    void everyServiceAuthenticatesAsItsOwnUserAndCreatesNoTopic() {
        for (String service : RIPCORD) {
            Map<String, Object> env = environment(service);
            assertThat(env).as(service)
                    .containsEntry("SPRING_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
                    .containsEntry("SPRING_KAFKA_PROPERTIES_SASL_MECHANISM", "SCRAM-SHA-512")
                    .containsEntry("RIPCORD_CANCEL_PROVISION_TOPICS", "false");
            String variable = "RIPCORD_KAFKA_" + service.toUpperCase() + "_PASSWORD";
            assertThat(String.valueOf(env.get("SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG"))).as(service)
                    .startsWith("org.apache.kafka.common.security.scram.ScramLoginModule required")
                    .contains("username=\"" + KafkaAcl.user(service) + "\"", "password=\"${" + variable + ":?")
                    .endsWith(";");
        }
    }

    /**
     * kafka-init grants each service's user exactly {@link KafkaAcl#theServicesNeed()}: no more (a worker cannot
     * publish cancels or forge relay messages, the gateway reads no cancellations), no less (every topic a service
     * uses is covered), and nothing else: no Create, no Alter, no cluster-wide grant.
     */
    @Test
    void kafkaInitGrantsEachServiceExactlyWhatItNeeds() {
        Set<KafkaAcl> granted = new LinkedHashSet<>();
        for (String command : kafkaInit().split("&&")) {
            if (!command.contains("kafka-acls.sh")) {
                continue;
            }
            assertThat(command).contains("--add", "--command-config").doesNotContain("--deny-principal", "--cluster");
            List<String> users = all(command, "--allow-principal User:(\\S+)");
            List<String> operations = all(command, "--operation (\\S+)");
            List<String> topics = all(command, "--topic (\\S+)");
            List<String> groups = all(command, "--group (\\S+)");
            assertThat(topics.size() + groups.size()).as(command).isEqualTo(1);
            boolean prefixed = command.contains("--resource-pattern-type prefixed");
            for (String user : users) {
                for (String operation : operations) {
                    granted.add(topics.isEmpty() ? new KafkaAcl(user, "group", groups.getFirst(), prefixed, operation)
                            : new KafkaAcl(user, "topic", topics.getFirst(), prefixed, operation));
                }
            }
        }
        assertThat(granted).containsExactlyInAnyOrderElementsOf(KafkaAcl.theServicesNeed());
        assertThat(KafkaAcl.topics(granted)).isEqualTo(TopicSpec.asTheServicesCreateThem(3).keySet());
    }

    private static List<String> all(String text, String regex) {
        List<String> found = new java.util.ArrayList<>();
        Matcher m = Pattern.compile(regex).matcher(text);
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }
}
