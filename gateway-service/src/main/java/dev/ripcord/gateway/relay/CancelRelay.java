package dev.ripcord.gateway.relay;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.RequestIds;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Explicit cancels across gateways: a cancel that reaches a gateway which does not hold the request (it is in flight
 * at another replica) is relayed over Kafka to every gateway; the one that holds it checks the caller's ownership
 * exactly as for a local cancel, cancels, and acknowledges.
 *
 * <p>Design note. The receiving gateway publishes a {@link RelayMessage.Kind#REQUEST} carrying the request ID and
 * the caller's identity (a hash-derived name, never the key) on the relay topic, which every gateway reads in full
 * (no consumer group: it {@code assign}s every partition and starts at the end, so only live traffic counts). The
 * owner answers {@code CANCELLED} (it cancelled: the receiver answers 200), or {@code REFUSED} when it holds the
 * request for another key; a gateway that does not hold it stays silent. {@link #ask} completes at once on
 * {@code CANCELLED} and otherwise exactly at the answer timeout, with {@code REFUSED} or {@code NO_ANSWER}: the
 * refusal changes neither the status (404) nor the timing a non-owner observes. Requests older than the answer timeout are ignored (their asker
 * has answered already). A request's age is measured without trusting the two gateways' clocks to agree: for each
 * asking gateway, the smallest difference seen between this clock at receipt and the asker's at sending is its clock
 * offset plus the shortest delivery; a request's age is how much longer than that its own difference is. Gateways
 * whose clocks differ by any amount relay to each other; a request that waited in a lagging consumer is still
 * recognised as late.
 *
 * <p>Threads: the HTTP route never touches a Kafka client. Sends go through a one-thread executor with a bounded
 * queue (a full queue is a request not sent: the asker waits out its timeout), and one consumer thread reads the
 * topic and cancels through {@link RequestContexts}, which never blocks. The consumer is positioned at the end of
 * every partition before the constructor returns, so a gateway that reports healthy already hears every relay.
 */
public final class CancelRelay implements AutoCloseable {

    /** What the owning gateway said within the answer timeout. */
    public enum Answer { CANCELLED, REFUSED, NO_ANSWER }

    private static final Logger log = LoggerFactory.getLogger(CancelRelay.class);
    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final Duration POLL = Duration.ofMillis(100);

    private final CancelRelayProperties properties;
    private final RequestContexts contexts;
    private final String instanceId;
    private final Clock clock;
    private final KafkaProducer<String, String> producer;
    private final KafkaConsumer<String, String> consumer;
    private final ExecutorService sender;
    private final Thread poller;
    private final Map<String, Pending> pending = new ConcurrentHashMap<>();
    /** Per asking gateway, the smallest (receipt here − sending there) seen, in ms; the poll thread's only. */
    private final Map<String, Long> smallestDifference = new java.util.HashMap<>();
    private volatile boolean running = true;

    private static final class Pending {
        final CompletableFuture<Answer> cancelled = new CompletableFuture<>();
        volatile boolean refused;
    }

    /** How long a starting gateway waits for the relay topic's partitions to be known to the broker it asks. */
    static final Duration PARTITIONS_WAIT = Duration.ofSeconds(30);

    /**
     * The topic's partitions as {@code lookup} reports them, asked again (every 200 ms) while it reports none, until
     * {@code wait} has passed. A topic another gateway has just created can be unknown for a moment to the broker
     * this one asks (its metadata not propagated yet): one empty answer is not a topic without partitions.
     */
    static List<PartitionInfo> awaitPartitions(String topic, java.util.function.Function<Duration, List<PartitionInfo>>
            lookup, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            long left = Math.max(1, deadline - System.nanoTime());
            List<PartitionInfo> found = lookup.apply(Duration.ofNanos(left));
            if (found != null && !found.isEmpty()) {
                return found;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new IllegalStateException("topic " + topic + " has no partitions (asked for " + wait + ")");
            }
            try {
                Thread.sleep(Math.min(200, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the partitions of " + topic, e);
            }
        }
    }

    /**
     * Connects to Kafka and positions the consumer at the end of the topic.
     *
     * @param producerConfig the producer's client settings (brokers, security); serializers are set here
     * @param consumerConfig the consumer's client settings; deserializers, no group and no auto-commit are set here
     */
    public CancelRelay(CancelRelayProperties properties, RequestContexts contexts, String instanceId,
                       Map<String, Object> producerConfig, Map<String, Object> consumerConfig, Clock clock) {
        this.properties = properties;
        this.contexts = contexts;
        this.instanceId = instanceId;
        this.clock = clock;
        this.producer = new KafkaProducer<>(producerConfig, new StringSerializer(), new StringSerializer());
        Map<String, Object> consumerSettings = new java.util.HashMap<>(consumerConfig);
        consumerSettings.remove("group.id");
        consumerSettings.put("enable.auto.commit", "false");
        this.consumer = new KafkaConsumer<>(consumerSettings, new StringDeserializer(), new StringDeserializer());
        try {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : awaitPartitions(properties.topic(),
                    timeout -> consumer.partitionsFor(properties.topic(), timeout), PARTITIONS_WAIT)) {
                partitions.add(new TopicPartition(p.topic(), p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(consumer::position); // resolve the end now, not at the first poll
        } catch (RuntimeException e) {
            consumer.close(Duration.ofSeconds(1));
            producer.close(Duration.ofSeconds(1));
            throw new IllegalStateException("cannot read the cancel-relay topic " + properties.topic() + ": " + e, e);
        }
        this.sender = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(10_000),
                Thread.ofPlatform().daemon().name("cancel-relay-send").factory());
        this.poller = Thread.ofPlatform().daemon().name("cancel-relay-poll").start(this::poll);
    }

    /**
     * Relays an explicit cancel of {@code requestId} by {@code caller} to the other gateways. Completes with
     * {@link Answer#CANCELLED} as soon as the owner acknowledges, else with {@link Answer#REFUSED} or
     * {@link Answer#NO_ANSWER} when the answer timeout has passed. Never blocks.
     */
    public Mono<Answer> ask(String requestId, String caller) {
        String relayId = UUID.randomUUID().toString();
        Pending entry = new Pending();
        pending.put(relayId, entry);
        send(RelayMessage.request(relayId, requestId, caller, instanceId, clock.millis()));
        return Mono.fromFuture(entry.cancelled, true)
                .timeout(properties.answerTimeout(),
                        Mono.fromSupplier(() -> entry.refused ? Answer.REFUSED : Answer.NO_ANSWER))
                .doFinally(s -> pending.remove(relayId));
    }

    /** The wait every answer but "cancelled" takes: {@link CancelRelayProperties#answerTimeout()}. */
    public Duration answerTimeout() {
        return properties.answerTimeout();
    }

    private void send(RelayMessage message) {
        try {
            sender.execute(() -> {
                try {
                    producer.send(new ProducerRecord<>(properties.topic(), message.requestId(),
                            JSON.writeValueAsString(message)), (metadata, e) -> {
                        if (e != null) {
                            RequestMdc.with(message.requestId(), () -> log.warn(
                                    "requestId={} cancel relay {} not sent: {}", message.requestId(), message.kind(),
                                    e.toString()));
                        }
                    });
                } catch (RuntimeException e) {
                    RequestMdc.with(message.requestId(), () -> log.warn("requestId={} cancel relay {} not sent: {}",
                            message.requestId(), message.kind(), e.toString()));
                }
            });
        } catch (RejectedExecutionException e) {
            RequestMdc.with(message.requestId(), () -> log.warn(
                    "requestId={} cancel relay {} dropped: send queue full or closed", message.requestId(),
                    message.kind()));
        }
    }

    private void poll() {
        while (running) {
            try {
                for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                    handle(record);
                }
            } catch (WakeupException e) {
                return;
            } catch (RuntimeException e) {
                if (running) {
                    log.warn("cancel relay: poll failed, retrying: {}", e.toString());
                }
            }
        }
    }

    private void handle(ConsumerRecord<String, String> record) {
        RelayMessage message;
        try {
            message = JSON.readValue(record.value(), RelayMessage.class);
        } catch (RuntimeException e) {
            log.warn("cancel relay: skipped a record that is not a relay message ({}-{}@{}): {}", record.topic(),
                    record.partition(), record.offset(), e.toString());
            return;
        }
        if (message.schemaVersion() != 1 || message.kind() == null || message.relayId() == null
                || !RequestIds.isValid(message.requestId()) || message.caller() == null) {
            log.warn("cancel relay: skipped an invalid relay message at {}-{}@{}", record.topic(), record.partition(),
                    record.offset());
            return;
        }
        switch (message.kind()) {
            case REQUEST -> onRequest(message);
            case CANCELLED -> {
                Pending entry = pending.get(message.relayId());
                if (entry != null) {
                    entry.cancelled.complete(Answer.CANCELLED);
                }
            }
            case REFUSED -> {
                Pending entry = pending.get(message.relayId());
                if (entry != null) {
                    entry.refused = true;
                }
            }
        }
    }

    private void onRequest(RelayMessage message) {
        if (instanceId.equals(message.from())) {
            return; // our own: we checked our requests before asking
        }
        long difference = clock.millis() - message.timestampMs();
        long age = difference - smallestDifference.merge(message.from(), difference, Math::min);
        if (age > properties.answerTimeout().toMillis()) {
            return; // its asker has answered already
        }
        String id = message.requestId();
        if (contexts.cancel(id, message.caller(), CancelReason.CLIENT_CANCEL).isPresent()) {
            RequestMdc.with(id, () -> log.info("requestId={} cancelled on behalf of {} (relayed by gateway {})", id,
                    message.caller(), message.from()));
            send(message.reply(RelayMessage.Kind.CANCELLED, instanceId, clock.millis()));
        } else if (contexts.isLive(id)) {
            send(message.reply(RelayMessage.Kind.REFUSED, instanceId, clock.millis()));
        }
    }

    @Override
    public void close() {
        running = false;
        consumer.wakeup();
        try {
            poller.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        consumer.close(Duration.ofSeconds(2));
        sender.shutdown();
        try {
            sender.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close(Duration.ofSeconds(2));
        pending.values().forEach(p -> p.cancelled.complete(Answer.NO_ANSWER));
    }
}
