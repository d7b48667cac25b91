package dev.ripcord.cancel.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import dev.ripcord.cancel.CancelPropagation;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;

/** The topics as the services create them: replicated topics keep writes with acks=all safe from a minority's loss. */
class CancelTopicsTest {

    @Test
    void minInsyncReplicasIsAMajority() {
        assertThat(CancelTopics.minInsyncReplicas(3)).isEqualTo(2);
        assertThat(CancelTopics.minInsyncReplicas(4)).isEqualTo(3);
        assertThat(CancelTopics.minInsyncReplicas(5)).isEqualTo(3);
    }

    @Test
    void bothTopicsOfAThreeTimesReplicatedSetupRequireTwoInSyncReplicas() {
        CancelProperties p = properties(3);
        NewTopic cancellations = CancelTopics.cancellationsTopic(p);
        NewTopic dlt = CancelTopics.deadLetterTopic(p);
        assertThat(cancellations.replicationFactor()).isEqualTo((short) 3);
        assertThat(cancellations.configs()).containsEntry(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2");
        assertThat(dlt.replicationFactor()).isEqualTo((short) 3);
        assertThat(dlt.configs()).containsEntry(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2");
        // Below three replicas the broker's default applies, as it did: the shipped single-copy topics are unchanged.
        assertThat(CancelTopics.cancellationsTopic(properties(1)).configs())
                .doesNotContainKey(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        assertThat(CancelTopics.deadLetterTopic(properties(2)).configs())
                .doesNotContainKey(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
    }

    private static CancelProperties properties(int replicationFactor) {
        return new CancelProperties(CancelPropagation.BOTH, false, "ripcord.cancellations",
                "ripcord.cancellations.dlt", 3, replicationFactor, Duration.ofHours(1), Duration.ofDays(7),
                Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000, true, Duration.ofSeconds(30), 10_000, 3,
                Duration.ofMillis(200), "test");
    }
}
