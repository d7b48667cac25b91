package dev.ripcord.stack;

import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code ./ripcord up --kafka-brokers=N}: the option, and what the services are told on such a cluster. */
class KafkaClusterOptionTest {

    @Test
    void theOptionIsTakenOffTheArgumentsAndTheRestKeepTheirOrder() {
        KafkaCluster.Parsed parsed = KafkaCluster.parse(new String[] {"--open", "--kafka-brokers=3", "--gateways=2"});
        assertThat(parsed.brokers()).isEqualTo(3);
        assertThat(parsed.rest()).containsExactly("--open", "--gateways=2");
        assertThat(KafkaCluster.parse(new String[] {"--open"}).brokers()).isEqualTo(1);
    }

    @Test
    void aCountOutsideOneToFiveIsAUsageError() {
        for (String bad : new String[] {"0", "6", "three", ""}) {
            assertThatThrownBy(() -> KafkaCluster.parse(new String[] {"--kafka-brokers=" + bad}))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--kafka-brokers must be a number of brokers (1-5)");
        }
    }

    @Test
    void fromThreeNodesTheServicesReplicateTheirTopicsThreeTimes() {
        assertThat(KafkaCluster.serviceProperties(1)).isEmpty();
        assertThat(KafkaCluster.serviceProperties(2)).containsExactlyInAnyOrderEntriesOf(Map.of(
                "ripcord.cancel.replication-factor", "2", "ripcord.lifecycle.replication-factor", "2"));
        assertThat(KafkaCluster.serviceProperties(3)).containsExactlyInAnyOrderEntriesOf(Map.of(
                "ripcord.cancel.replication-factor", "3", "ripcord.lifecycle.replication-factor", "3"));
        assertThat(KafkaCluster.serviceProperties(5)).containsEntry("ripcord.cancel.replication-factor", "3");
    }
}
