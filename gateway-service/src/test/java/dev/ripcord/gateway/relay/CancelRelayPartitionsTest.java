package dev.ripcord.gateway.relay;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.PartitionInfo;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A gateway that starts just as another one creates the relay topic may be told by its broker that the topic has no
 * partitions yet (the creation's metadata not propagated): it must ask again, not give up on its first answer.
 */
class CancelRelayPartitionsTest {

    private static final PartitionInfo P0 = new PartitionInfo("relay", 0, null, null, null);

    @Test
    void anEmptyAnswerIsAskedAgainUntilThePartitionsAreKnown() {
        List<Duration> asked = new ArrayList<>();
        List<PartitionInfo> found = CancelRelay.awaitPartitions("relay", timeout -> {
            asked.add(timeout);
            return asked.size() < 3 ? List.of() : List.of(P0);
        }, Duration.ofSeconds(30));

        assertThat(found).containsExactly(P0);
        assertThat(asked).as("asked three times, each with what is left of the wait").hasSize(3)
                .allSatisfy(t -> assertThat(t).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(30)));
    }

    @Test
    void aTopicStillWithoutPartitionsWhenTheWaitIsOverIsAnError() {
        assertThatThrownBy(() -> CancelRelay.awaitPartitions("relay", timeout -> List.of(), Duration.ofMillis(50)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("topic relay has no partitions");
    }
}
