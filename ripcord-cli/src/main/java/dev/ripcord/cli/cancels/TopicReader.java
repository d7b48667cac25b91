package dev.ripcord.cli.cancels;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a topic without a consumer group (assigned partitions, nothing committed): every partition from a time (the
 * first record whose broker timestamp is not older) or from its start, up to the end offsets read when it started, or
 * on for ever ({@code follow}). Closing it stops a follow from another thread ({@link KafkaConsumer#wakeup()}).
 *
 * <p>It never creates a topic ({@code allow.auto.create.topics=false}): a topic that does not exist is a
 * {@link MissingTopicException}, or, for a follow, something to wait for.
 */
final class TopicReader implements AutoCloseable {

    /** How often a follow asks again whether the topic exists yet. */
    static final Duration TOPIC_RECHECK = Duration.ofSeconds(1);

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final String topic;
    private final String brokers;
    private final CountDownLatch woken = new CountDownLatch(1);

    TopicReader(Map<String, Object> clientConfig, String topic) {
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.put("enable.auto.commit", "false");
        config.put("auto.offset.reset", "earliest");
        config.put("key.deserializer", ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", ByteArrayDeserializer.class.getName());
        config.put("allow.auto.create.topics", "false");
        this.consumer = new KafkaConsumer<>(config);
        this.topic = topic;
        this.brokers = String.valueOf(config.get("bootstrap.servers"));
    }

    /**
     * Reads from {@code from} (null: each partition's start) to the end as it is now, or on for ever if {@code follow}
     * (null {@code from} with {@code follow}: only what arrives from now on).
     *
     * @throws MissingTopicException if the topic does not exist and this is not a follow
     */
    void read(Instant from, boolean follow, Consumer<ConsumerRecord<byte[], byte[]>> sink) {
        read(from, follow, () -> { }, sink);
    }

    /**
     * {@link #read(Instant, boolean, Consumer)}, where a follow of a topic that does not exist yet calls
     * {@code waiting} once and then waits for the topic to appear (asking every {@link #TOPIC_RECHECK}), reading it
     * from its start once it does: every record it ever had is new to this follow.
     */
    void read(Instant start, boolean follow, Runnable waiting, Consumer<ConsumerRecord<byte[], byte[]>> sink) {
        Instant from = start;
        List<TopicPartition> partitions = follow ? partitionsOrNull() : partitions();
        if (partitions == null) {
            waiting.run();
            while ((partitions = partitionsOrNull()) == null) {
                sleep(TOPIC_RECHECK);
            }
            from = Instant.EPOCH;
        }
        Instant since = from;
        consumer.assign(partitions);
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
        if (from == null) {
            if (follow) {
                ends.forEach(consumer::seek);
            } else {
                consumer.seekToBeginning(partitions);
            }
        } else {
            Map<TopicPartition, Long> query = new HashMap<>();
            partitions.forEach(p -> query.put(p, since.toEpochMilli()));
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
            for (TopicPartition p : partitions) {
                OffsetAndTimestamp first = found.get(p);
                consumer.seek(p, first != null ? first.offset() : ends.get(p));
            }
        }
        Map<TopicPartition, Long> remaining = new HashMap<>();
        if (!follow) {
            for (TopicPartition p : partitions) {
                if (consumer.position(p) < ends.get(p)) {
                    remaining.put(p, ends.get(p));
                }
            }
        }
        while (follow || !remaining.isEmpty()) {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                TopicPartition p = new TopicPartition(record.topic(), record.partition());
                Long end = remaining.get(p);
                if (!follow && (end == null || record.offset() >= end)) {
                    continue;
                }
                sink.accept(record);
            }
            if (!follow) {
                remaining.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue());
            }
        }
    }

    /** The record at {@code partition}@{@code offset}, or null if there is none (compacted, expired, not yet written). */
    ConsumerRecord<byte[], byte[]> readOne(int partition, long offset) {
        TopicPartition p = new TopicPartition(topic, partition);
        if (partitions().stream().noneMatch(p::equals)) {
            return null;
        }
        consumer.assign(List.of(p));
        long end = consumer.endOffsets(List.of(p)).get(p);
        if (offset >= end) {
            return null;
        }
        consumer.seek(p, offset);
        while (consumer.position(p) < end) {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                if (record.offset() == offset) {
                    return record;
                }
                if (record.offset() > offset) {
                    return null;
                }
            }
        }
        return null;
    }

    private List<TopicPartition> partitions() {
        List<TopicPartition> partitions = partitionsOrNull();
        if (partitions == null) {
            throw new MissingTopicException(topic, brokers);
        }
        return partitions;
    }

    /** The topic's partitions, or null if the broker does not know the topic. */
    private List<TopicPartition> partitionsOrNull() {
        List<PartitionInfo> infos = consumer.partitionsFor(topic);
        if (infos == null || infos.isEmpty()) {
            return null;
        }
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : infos) {
            partitions.add(new TopicPartition(topic, info.partition()));
        }
        return partitions;
    }

    /** Waits {@code d}, or throws {@code WakeupException} at once if {@link #wakeup()} is called meanwhile. */
    private void sleep(Duration d) {
        try {
            if (woken.await(d.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new WakeupException();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WakeupException();
        }
    }

    /** Makes a blocked {@link #read} with {@code follow} return (by throwing {@code WakeupException}). */
    void wakeup() {
        woken.countDown();
        consumer.wakeup();
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(2));
    }
}
