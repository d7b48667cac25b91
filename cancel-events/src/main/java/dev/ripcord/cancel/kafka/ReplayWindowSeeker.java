package dev.ripcord.cancel.kafka;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.stream.binder.kafka.KafkaBindingRebalanceListener;

/**
 * Replays recent history whenever the cancel consumer is assigned partitions: each partition is positioned at the
 * first record not older than {@code now - replay-window} (broker {@code offsetsForTimes}; the topic uses
 * {@code LogAppendTime}, so those timestamps are monotonic per partition). A worker that starts, restarts or gains a
 * partition after a cancel was published therefore still learns of it, as a tombstone in its registry.
 *
 * <p>Why by time, and on every assignment: each process has its own consumer group (broadcast) and commits no
 * offsets, so there is no position to resume from, and replaying is harmless because the registry treats a replayed
 * cancel as a no-op. Committed offsets would also be wrong after a restart: the window matters, not the last position.
 *
 * <p>Ordering matters to avoid a gap: the end offsets are read <em>before</em> {@code offsetsForTimes}, and a
 * partition with nothing in the window is positioned at that earlier end offset. A record appended in between (with a
 * timestamp inside the window) then lies at or after that position and is consumed. {@code seekToEnd} would be lazy
 * and could skip it.
 *
 * <p>The Kafka binder takes a single {@link KafkaBindingRebalanceListener} bean; this one ignores bindings other
 * than {@value CancelBindings#INPUT}. It backs off if the service defines its own, and then there is no replay.
 */
final class ReplayWindowSeeker implements KafkaBindingRebalanceListener {

    private static final Logger log = LoggerFactory.getLogger(ReplayWindowSeeker.class);

    private final Duration window;
    private final Clock clock;

    ReplayWindowSeeker(Duration window, Clock clock) {
        this.window = window;
        this.clock = clock;
    }

    @Override
    public void onPartitionsAssigned(String bindingName, Consumer<?, ?> consumer,
            Collection<TopicPartition> partitions, boolean initial) {
        if (!CancelBindings.INPUT.equals(bindingName) || partitions.isEmpty() || window.isZero()) {
            return;
        }
        Instant from = clock.instant().minus(window);
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
        Map<TopicPartition, Long> query = new HashMap<>();
        for (TopicPartition partition : partitions) {
            query.put(partition, from.toEpochMilli());
        }
        Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
        Map<String, Long> positions = new TreeMap<>();
        for (TopicPartition partition : partitions) {
            OffsetAndTimestamp first = found.get(partition);
            long offset = first != null ? first.offset() : ends.getOrDefault(partition, 0L);
            consumer.seek(partition, offset);
            positions.put(partition.toString(), offset);
        }
        log.info("cancel consumer replays from {} ({} window{}): {}", from, window, initial ? "" : ", re-assigned",
                positions);
    }
}
