package dev.ripcord.lifecycle.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;

/** The lifecycle topic as a service creates it: replicated three times, a write needs two in-sync copies. */
class LifecycleTopicTest {

    @Test
    void aThreeTimesReplicatedTopicRequiresTwoInSyncReplicasAndASingleCopyKeepsTheBrokersDefault() {
        NewTopic three = LifecycleAutoConfiguration.topic(new LifecycleProperties(true, "ripcord.lifecycle", 3, 3,
                Duration.ofDays(7), 10_000, Duration.ofSeconds(1)));
        assertThat(three.replicationFactor()).isEqualTo((short) 3);
        assertThat(three.configs()).containsEntry(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2")
                .containsEntry(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE);
        NewTopic one = LifecycleAutoConfiguration.topic(new LifecycleProperties(true, "ripcord.lifecycle", 3, 1,
                Duration.ofDays(7), 10_000, Duration.ofSeconds(1)));
        assertThat(one.configs()).doesNotContainKey(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
    }
}
