package dev.ripcord.lifecycle.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventCodec;
import dev.ripcord.lifecycle.LifecycleSink;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends lifecycle events to the lifecycle topic, keyed by {@link LifecycleEvent#key()} (the request ID), so that one
 * request's events stay on one partition, in order. Runs on the publisher's thread only: the producer may block
 * there (metadata, a full buffer) and never on an engine or event-loop thread. A failed send is counted
 * ({@link #failed()}, which the publisher's {@code ripcord.lifecycle.send.failures} includes) and logged at WARN, at
 * most once per ten seconds; the audit sees it as a sequence gap.
 */
public final class KafkaLifecycleSink implements LifecycleSink {

    private static final Logger log = LoggerFactory.getLogger(KafkaLifecycleSink.class);

    private final Producer<String, byte[]> producer;
    private final String topic;
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong nextWarning = new AtomicLong(Long.MIN_VALUE);
    private static final long WARN_EVERY_NANOS = Duration.ofSeconds(10).toNanos();

    public KafkaLifecycleSink(Producer<String, byte[]> producer, String topic) {
        this.producer = producer;
        this.topic = topic;
    }

    /** A sink with its own producer, configured from {@code clientConfig} (brokers, security) plus our settings. */
    public static KafkaLifecycleSink create(Map<String, Object> clientConfig, String topic) {
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        config.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 20);
        config.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
        // Not idempotent, on purpose. Every event carries its process's incarnation and sequence number, and the
        // audit removes duplicates by them, so a retry that writes an event twice costs nothing. An idempotent
        // producer, by contrast, can wedge after a leader dies: the broker that takes over answers
        // OUT_OF_ORDER_SEQUENCE_NUMBER to every retry of a partition until the delivery timeout, and the events behind
        // it show as a sequence gap (seen in the fault bench: 54 events of one prefill lost to one broker kill).
        // Order across retries does not matter either: the audit orders a process's events by sequence number.
        config.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        config.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
        config.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "ripcord-lifecycle");
        return new KafkaLifecycleSink(new KafkaProducer<>(config), topic);
    }

    @Override
    public void send(LifecycleEvent event) {
        try {
            producer.send(new ProducerRecord<>(topic, event.key(), LifecycleEventCodec.encode(event)),
                    (metadata, error) -> {
                        if (error != null) {
                            failed(event, error);
                        }
                    });
        } catch (RuntimeException e) {
            failed(event, e);
        }
    }

    private void failed(LifecycleEvent event, Exception error) {
        long total = failed.incrementAndGet();
        long now = System.nanoTime();
        long due = nextWarning.get();
        if ((due == Long.MIN_VALUE || now - due >= 0) && nextWarning.compareAndSet(due, now + WARN_EVERY_NANOS)) {
            log.warn("lifecycle log: {} send(s) failed since start (last: {}: {})", total, event, error.toString());
        }
    }

    /** Sends that failed (the broker was unreachable for longer than the producer waits, say). */
    @Override
    public long failed() {
        return failed.get();
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }

    @Override
    public void close(Duration timeout) {
        producer.close(timeout);
    }
}
