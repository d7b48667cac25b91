package dev.ripcord.cancel.kafka;

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.mockito.ArgumentCaptor;
import org.springframework.integration.kafka.inbound.KafkaMessageDrivenChannelAdapter;
import org.springframework.kafka.listener.ConsumerSeekAware.ConsumerSeekCallback;

import static org.assertj.core.api.Assertions.assertThat;

/** The replay seek is Spring Kafka's seekToTimestamp, at now - window, on the cancellations binding only. */
class ReplayWindowSeekerTest {

    private static final Instant NOW = Instant.parse("2026-12-01T12:00:00Z");
    private final ReplayWindowSeeker seeker =
            new ReplayWindowSeeker("ripcord.cancellations", Duration.ofMinutes(10), () -> NOW);

    @Test
    void everyAssignedPartitionIsSoughtToTheStartOfTheWindow() {
        ConsumerSeekCallback callback = mock(ConsumerSeekCallback.class);
        Map<TopicPartition, Long> assigned = Map.of(new TopicPartition("ripcord.cancellations", 0), 5L,
                new TopicPartition("ripcord.cancellations", 2), 9L);

        seeker.seek(assigned, callback);

        verify(callback).seekToTimestamp(Set.copyOf(assigned.keySet()),
                NOW.minus(Duration.ofMinutes(10)).toEpochMilli());
    }

    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void onlyTheCancellationsBindingGetsTheSeekAndAZeroWindowDisablesIt() {
        KafkaMessageDrivenChannelAdapter<?, ?> other = mock(KafkaMessageDrivenChannelAdapter.class);
        seeker.configure(other, "some.other.topic", "g");
        verify(other, never()).setOnPartitionsAssignedSeekCallback(any());

        KafkaMessageDrivenChannelAdapter<?, ?> disabled = mock(KafkaMessageDrivenChannelAdapter.class);
        new ReplayWindowSeeker("ripcord.cancellations", Duration.ZERO, () -> NOW)
                .configure(disabled, "ripcord.cancellations", "g");
        verify(disabled, never()).setOnPartitionsAssignedSeekCallback(any());

        KafkaMessageDrivenChannelAdapter<?, ?> ours = mock(KafkaMessageDrivenChannelAdapter.class);
        seeker.configure(ours, "ripcord.cancellations", "g");
        ArgumentCaptor<BiConsumer> captor = ArgumentCaptor.forClass(BiConsumer.class);
        verify(ours).setOnPartitionsAssignedSeekCallback(captor.capture());
        assertThat(captor.getValue()).isNotNull();
    }
}
