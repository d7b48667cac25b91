package dev.ripcord.gateway.routing.prefix;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the prefix-cache topic into a {@link PrefixIndex}, from the beginning of every partition: a gateway that
 * starts or restarts rebuilds its picture of every worker's cache from the events still on the topic. No consumer
 * group (every gateway reads everything, and nothing is committed: a restart reads again from the beginning).
 *
 * <p>Everything Kafka happens on this class's own thread, started by the constructor, which returns at once: until
 * the topic can be read (no broker, or no worker has created the topic yet) the index stays empty and routing is by
 * load alone. The thread looks for the topic's partitions again every {@link #PARTITION_REFRESH}, so partitions
 * added later are read too.
 */
public final class PrefixCacheConsumer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PrefixCacheConsumer.class);
    private static final Duration POLL = Duration.ofMillis(500);
    static final Duration PARTITION_REFRESH = Duration.ofSeconds(30);
    private static final Duration RETRY = Duration.ofSeconds(2);

    private final PrefixIndex index;
    private final String topic;
    private final KafkaConsumer<String, byte[]> consumer;
    private final Thread thread;
    private final Map<PrefixIndex.Outcome, Counter> outcomes = new HashMap<>();
    private final Counter invalid;
    private volatile boolean running = true;
    private volatile long records;
    /** The last attempt to read failed (this thread only). */
    private boolean failing;

    /**
     * @param consumerConfig client settings (brokers, security); deserializers, no group and no auto-commit are set
     *                       here
     */
    public PrefixCacheConsumer(PrefixIndex index, String topic, Map<String, Object> consumerConfig,
                               MeterRegistry meters) {
        this.index = index;
        this.topic = topic;
        Map<String, Object> settings = new HashMap<>(consumerConfig);
        settings.remove(ConsumerConfig.GROUP_ID_CONFIG);
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // The prefill workers create the topic with its settings; a gateway asking for it must not create it bare.
        settings.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        this.consumer = new KafkaConsumer<>(settings, new StringDeserializer(), new ByteArrayDeserializer());
        for (PrefixIndex.Outcome outcome : PrefixIndex.Outcome.values()) {
            outcomes.put(outcome, Counter.builder("ripcord.gateway.prefix.events")
                    .description("prefix-cache events read, by what they did to the index").tag("outcome", outcome.tag())
                    .register(meters));
        }
        this.invalid = Counter.builder("ripcord.gateway.prefix.events").tag("outcome", "invalid")
                .description("prefix-cache events read, by what they did to the index").register(meters);
        Gauge.builder("ripcord.gateway.prefix.index.pages", index, PrefixIndex::pages)
                .description("prefix-cache pages the index knows trusted workers to hold").register(meters);
        Gauge.builder("ripcord.gateway.prefix.index.workers", index, PrefixIndex::workers)
                .description("prefill workers the prefix index knows").tag("state", "known").register(meters);
        Gauge.builder("ripcord.gateway.prefix.index.workers", index, PrefixIndex::untrustedWorkers)
                .description("prefill workers the prefix index knows").tag("state", "untrusted").register(meters);
        this.thread = Thread.ofPlatform().daemon().name("ripcord-prefix-cache-index").start(this::run);
    }

    /** Records read since start, whatever they did (for tests and diagnostics). */
    public long records() {
        return records;
    }

    private void run() {
        List<TopicPartition> assigned = List.of();
        long nextRefresh = System.nanoTime(); // due at once
        while (running) {
            try {
                if (System.nanoTime() - nextRefresh >= 0) {
                    assigned = assign(assigned);
                    nextRefresh = System.nanoTime() + (assigned.isEmpty() ? RETRY : PARTITION_REFRESH).toNanos();
                }
                if (assigned.isEmpty()) {
                    Thread.sleep(RETRY.toMillis() / 4);
                    continue;
                }
                for (ConsumerRecord<String, byte[]> record : consumer.poll(POLL)) {
                    handle(record);
                }
                if (failing) {
                    failing = false;
                    log.info("prefix-cache index: reading {} again", topic);
                }
            } catch (WakeupException | InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (running) {
                    // Once per outage at WARN: routing goes on by what the index holds, or by load.
                    if (!failing) {
                        log.warn("prefix-cache index: reading {} failed, retrying every {}: {}", topic, RETRY,
                                e.toString());
                    } else {
                        log.debug("prefix-cache index: reading {} failed again: {}", topic, e.toString());
                    }
                    failing = true;
                    try {
                        Thread.sleep(RETRY.toMillis());
                    } catch (InterruptedException interrupted) {
                        return;
                    }
                }
            }
        }
    }

    /** Assigns every partition of the topic, new ones read from their beginning; the current ones keep their place. */
    private List<TopicPartition> assign(List<TopicPartition> current) {
        List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(5));
        List<TopicPartition> partitions = new ArrayList<>();
        if (infos != null) {
            for (PartitionInfo p : infos) {
                partitions.add(new TopicPartition(p.topic(), p.partition()));
            }
        }
        if (partitions.isEmpty() || partitions.size() == current.size()) {
            return current; // not there yet, or unchanged
        }
        List<TopicPartition> added = new ArrayList<>(partitions);
        added.removeAll(current);
        consumer.assign(partitions);
        consumer.seekToBeginning(added);
        log.info("prefix-cache index: reading {} partition(s) of {} from the beginning", added.size(), topic);
        return partitions;
    }

    private void handle(ConsumerRecord<String, byte[]> record) {
        records++; // this thread only
        PrefixCacheEvent event;
        try {
            event = PrefixCacheEvent.decode(record.value());
        } catch (RuntimeException e) {
            invalid.increment();
            log.warn("prefix-cache index: skipped an unreadable record at {}-{}@{}: {}", record.topic(),
                    record.partition(), record.offset(), e.toString());
            return;
        }
        PrefixIndex.Outcome outcome = index.apply(event);
        outcomes.get(outcome).increment();
        if (outcome == PrefixIndex.Outcome.GAP) {
            log.warn("prefix-cache index: events of worker {} were lost (at {}); its pages are not routed by until "
                    + "its next CLEARED", event.workerId(), event);
        }
    }

    @Override
    public void close() {
        running = false;
        consumer.wakeup();
        thread.interrupt();
        try {
            thread.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        consumer.close(Duration.ofSeconds(2));
    }
}
