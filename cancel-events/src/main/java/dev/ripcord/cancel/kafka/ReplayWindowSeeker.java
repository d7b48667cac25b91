package dev.ripcord.cancel.kafka;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.stream.config.ConsumerEndpointCustomizer;
import org.springframework.integration.kafka.inbound.KafkaMessageDrivenChannelAdapter;
import org.springframework.kafka.listener.ConsumerSeekAware.ConsumerSeekCallback;

/**
 * Replays recent history whenever the cancel consumer is assigned partitions: Spring Kafka's
 * {@link ConsumerSeekCallback#seekToTimestamp(java.util.Collection, long) seekToTimestamp} positions each partition at
 * the first record whose timestamp is not older than {@code now - replay-window} (the topic uses {@code LogAppendTime},
 * so a record's timestamp is when the broker accepted it, monotonic per partition). A worker that starts, restarts or
 * gains a partition after a cancel was published therefore still learns of it, as a tombstone in its registry.
 *
 * <p>Why by time, and on every assignment: each process has its own consumer group (broadcast) and commits no
 * offsets, so there is no position to resume from, and replaying is harmless because the registry treats a replayed
 * cancel as a no-op. The window is also enforced where it matters, by publish time, in the registry: a cancel
 * published longer than the tombstone TTL ago keeps nothing ({@link CancelEventConsumer#publishedAt}).
 *
 * <p>No gap: {@code seekToTimestamp} leaves a partition that has nothing in the window where the binder's
 * {@code start-offset} put it, which {@link CancelBindingDefaults} sets to {@code earliest}. Such a partition is then
 * read from its start (only records older than the window, all expired no-ops, which is cheap: nothing was published
 * there for a whole window), never from a lazily resolved end that could skip a record appended meanwhile.
 *
 * <p>A {@link ConsumerEndpointCustomizer} for the binder's inbound adapter, applied to the
 * {@value CancelBindings#INPUT} binding's destination only; a service may define other customizers beside it.
 */
final class ReplayWindowSeeker implements ConsumerEndpointCustomizer<KafkaMessageDrivenChannelAdapter<?, ?>> {

    private static final Logger log = LoggerFactory.getLogger(ReplayWindowSeeker.class);

    private final String topic;
    private final Duration window;
    private final InstantSource clock;

    ReplayWindowSeeker(String topic, Duration window, InstantSource clock) {
        this.topic = topic;
        this.window = window;
        this.clock = clock;
    }

    @Override
    public void configure(KafkaMessageDrivenChannelAdapter<?, ?> endpoint, String destinationName, String group) {
        if (!topic.equals(destinationName) || window.isZero()) {
            return;
        }
        endpoint.setOnPartitionsAssignedSeekCallback(this::seek);
    }

    /** Seeks every assigned partition to the start of the window; public to the package for tests. */
    void seek(Map<TopicPartition, Long> assignments, ConsumerSeekCallback callback) {
        if (assignments.isEmpty()) {
            return;
        }
        Instant from = clock.instant().minus(window);
        callback.seekToTimestamp(assignments.keySet(), from.toEpochMilli());
        log.info("cancel consumer replays {} from {} ({} window)", assignments.keySet(), from, window);
    }
}
