package dev.ripcord.gateway.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import dev.ripcord.cancel.kafka.CancelProperties;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/**
 * The relay topic as the gateway creates it, the spec that compose's kafka-init and Strimzi's KafkaTopic repeat
 * (deployment-tests compares them): replicated like the cancellations topic, with a majority of the replicas in
 * sync from three replicas on, as the cancellations and lifecycle topics.
 */
class CancelRelayTopicTest {

    private static NewTopic topic(int replicationFactor) {
        Binder binder = new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.cancel.replication-factor", String.valueOf(replicationFactor))));
        return CancelRelayConfiguration.topic(
                binder.bindOrCreate("ripcord.gateway.cancel-relay", CancelRelayProperties.class),
                binder.bindOrCreate("ripcord.cancel", CancelProperties.class));
    }

    @Test
    void oneReplicaLeavesMinInsyncReplicasToTheBroker() {
        NewTopic topic = topic(1);
        assertThat(topic.name()).isEqualTo("ripcord.gateway.cancel-relay");
        assertThat(topic.numPartitions()).isEqualTo(3);
        assertThat(topic.replicationFactor()).isEqualTo((short) 1);
        assertThat(topic.configs()).containsOnly(Map.entry("cleanup.policy", "delete"),
                Map.entry("retention.ms", "600000"), Map.entry("segment.ms", "300000"));
    }

    @Test
    void threeReplicasKeepTwoInSync() {
        NewTopic topic = topic(3);
        assertThat(topic.replicationFactor()).isEqualTo((short) 3);
        assertThat(topic.configs()).containsEntry("min.insync.replicas", "2").containsEntry("cleanup.policy", "delete");
    }
}
