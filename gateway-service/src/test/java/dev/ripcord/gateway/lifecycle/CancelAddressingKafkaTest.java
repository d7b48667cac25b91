package dev.ripcord.gateway.lifecycle;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Registration;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the gateway's cancels are addressed to, on a real (embedded KRaft) broker: each is keyed by the internal ID of
 * exactly one request, so a worker that reads the cancellations topic (first delivery, or a replay of all of it)
 * aborts the request it was meant for and never a later one that reuses the client's ID, nor another key's.
 *
 * <p>The gateway's events go to the topic as the cancel library sends them (record key the request ID, value
 * {@link CancelEventCodec}); the "worker" is a {@link CancellationRegistry} fed from the topic as the library's
 * consumer feeds it (the event, source {@code KAFKA}, its publish time).
 */
@EmbeddedKafka(topics = CancelAddressingKafkaTest.TOPIC, partitions = 3)
class CancelAddressingKafkaTest {

    static final String TOPIC = "identity-cancellations";
    private static final String KEY_A = "key-aaaaaaaaaaaa";
    private static final String KEY_B = "key-bbbbbbbbbbbb";

    private static KafkaProducer<String, byte[]> producer;
    private final List<CompletableFuture<?>> sends = new CopyOnWriteArrayList<>();
    private final CancelPublisher toKafka = new CancelPublisher() {
        @Override
        public CompletableFuture<Void> publish(CancelEvent event) {
            CompletableFuture<Void> sent = new CompletableFuture<>();
            producer.send(new ProducerRecord<>(TOPIC, null, event.timestamp().toEpochMilli(), event.requestId(),
                    CancelEventCodec.encode(event)), (metadata, e) -> {
                if (e == null) {
                    sent.complete(null);
                } else {
                    sent.completeExceptionally(e);
                }
            });
            sends.add(sent);
            return sent;
        }

        @Override
        public CompletableFuture<Void> publish(String requestId, CancelReason reason) {
            throw new UnsupportedOperationException("the gateway publishes whole events");
        }
    };
    private final RequestContexts gateway = new RequestContexts(toKafka, kafkaPropagation(), new SimpleMeterRegistry(),
            Clock.systemUTC(), Duration.ofMinutes(5));

    @BeforeAll
    static void connect() {
        producer = new KafkaProducer<>(Map.of("bootstrap.servers", brokers(), "linger.ms", "0"),
                new StringSerializer(), new ByteArraySerializer());
    }

    @AfterAll
    static void disconnect() {
        producer.close(Duration.ofSeconds(2));
    }

    @Test
    void anIdReusedRightAfterACancelIsServedNormallyEvenWhenTheWholeTopicIsReplayed() throws Exception {
        CancellationRegistry worker = new CancellationRegistry();
        List<String> aborted = new CopyOnWriteArrayList<>();
        RequestContext first = gateway.open("reuse-1", KEY_A, null);
        Registration firstJob = worker.register(first.internalId(), (id, reason, source) -> aborted.add(id));
        gateway.cancel("reuse-1", KEY_A, CancelReason.CLIENT_CANCEL);
        deliverWholeTopic(worker);
        assertThat(firstJob.isCancelled()).as("the cancel reached its request").isTrue();
        firstJob.complete();
        gateway.close(first);

        // The client retries at once with the same ID: a new request, a new internal ID, served normally.
        RequestContext second = gateway.open("reuse-1", KEY_A, null);
        try (Registration secondJob = worker.register(second.internalId(), (id, reason, source) -> aborted.add(id))) {
            deliverWholeTopic(worker); // a rebalance or `ripcord cancels replay` delivers the old cancel again
            assertThat(secondJob.isCancelled()).as("the reuse meets no tombstone and no replay").isFalse();
            assertThat(second.state()).isEqualTo(RequestContext.State.ACTIVE);
        } finally {
            gateway.close(second);
        }
        assertThat(aborted).containsExactly(first.internalId());
    }

    @Test
    void aReplayOfTheWholeCancellationsTopicDuringLiveTrafficAbortsNoLiveRequest() throws Exception {
        // Four client IDs under each of two keys, each cancelled and reused four times, and then reused once more
        // by a request that stays live. Every worker job is still running when the topic is delivered: the
        // cancelled ones are aborted by their own cancels, the live ones by none. Then the whole topic is delivered
        // again, to the same worker and to one that restarted with the live requests registered.
        CancellationRegistry worker = new CancellationRegistry();
        List<String> keys = List.of(KEY_A, KEY_B);
        List<Registration> cancelledJobs = new ArrayList<>();
        for (int cycle = 0; cycle < 4; cycle++) {
            for (int i = 0; i < 4; i++) {
                for (String key : keys) {
                    RequestContext ctx = gateway.open("storm-" + i, key, null);
                    cancelledJobs.add(worker.register(ctx.internalId(), (id, reason, source) -> { }));
                    gateway.cancel("storm-" + i, key, CancelReason.CLIENT_CANCEL);
                    gateway.close(ctx);
                }
            }
        }
        List<RequestContext> live = new ArrayList<>();
        List<Registration> liveJobs = new ArrayList<>();
        List<String> abortedLive = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 4; i++) {
            for (String key : keys) {
                RequestContext ctx = gateway.open("storm-" + i, key, null);
                live.add(ctx);
                liveJobs.add(worker.register(ctx.internalId(), (id, reason, source) -> abortedLive.add(id)));
            }
        }
        deliverWholeTopic(worker);
        assertThat(cancelledJobs).as("each cancel reached its request").allMatch(Registration::isCancelled);
        cancelledJobs.forEach(Registration::complete);
        CancellationRegistry restarted = new CancellationRegistry();
        List<Registration> restartedJobs = new ArrayList<>();
        for (RequestContext ctx : live) {
            restartedJobs.add(restarted.register(ctx.internalId(), (id, reason, source) -> abortedLive.add(id)));
        }

        int delivered = deliverWholeTopic(worker);
        deliverWholeTopic(restarted);

        assertThat(delivered).as("every cancel is on the topic").isGreaterThanOrEqualTo(32);
        assertThat(liveJobs).noneMatch(Registration::isCancelled);
        assertThat(restartedJobs).noneMatch(Registration::isCancelled);
        assertThat(abortedLive).isEmpty();
        liveJobs.forEach(Registration::complete);
        restartedJobs.forEach(Registration::complete);
        live.forEach(gateway::close);
        worker.assertNoLiveRegistrations();
        restarted.assertNoLiveRegistrations();
    }

    @Test
    void twoKeysWithTheSameIdCannotCancelEachOtherThroughKafka() throws Exception {
        CancellationRegistry worker = new CancellationRegistry();
        RequestContext ofA = gateway.open("shared", KEY_A, null);
        RequestContext ofB = gateway.open("shared", KEY_B, null);
        try (Registration jobA = worker.register(ofA.internalId(), (id, reason, source) -> { });
                Registration jobB = worker.register(ofB.internalId(), (id, reason, source) -> { })) {
            gateway.cancel("shared", KEY_B, CancelReason.CLIENT_CANCEL);
            deliverWholeTopic(worker);

            assertThat(jobB.isCancelled()).isTrue();
            assertThat(jobA.isCancelled()).as("A's request under the same client ID").isFalse();
            assertThat(ofA.state()).isEqualTo(RequestContext.State.ACTIVE);
        } finally {
            gateway.close(ofA);
            gateway.close(ofB);
        }
    }

    @Test
    void aCancelPublishedBeforeTheWorkerRegistersTheRequestStillStopsIt() throws Exception {
        CancellationRegistry worker = new CancellationRegistry();
        RequestContext ctx = gateway.open("early", KEY_A, null);
        try {
            gateway.cancel("early", KEY_A, CancelReason.CLIENT_CANCEL); // the request is still on its way
            deliverWholeTopic(worker);
            List<CancelReason> aborts = new CopyOnWriteArrayList<>();
            try (Registration job = worker.register(ctx.internalId(), (id, reason, source) -> aborts.add(reason))) {
                assertThat(job.isCancelled()).isTrue();
            }
            assertThat(aborts).containsExactly(CancelReason.CLIENT_CANCEL);
        } finally {
            gateway.close(ctx);
        }
    }

    /** Waits for every send, then feeds the whole topic, from its first offset, to {@code worker}. */
    private int deliverWholeTopic(CancellationRegistry worker) throws ExecutionException, InterruptedException {
        for (CompletableFuture<?> send : sends) {
            send.get();
        }
        Map<String, Object> settings = new HashMap<>();
        settings.put("bootstrap.servers", brokers());
        settings.put("enable.auto.commit", "false");
        int delivered = 0;
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(settings, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(TOPIC, Duration.ofSeconds(30))) {
                partitions.add(new TopicPartition(p.topic(), p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < ends.get(p))) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    CancelEvent event = CancelEventCodec.decode(record.value());
                    assertThat(record.key()).isEqualTo(event.requestId());
                    worker.cancel(event.requestId(), event.reason(), CancelSource.KAFKA, event.timestamp());
                    delivered++;
                }
            }
        }
        return delivered;
    }

    private static String brokers() {
        return EmbeddedKafkaCondition.getBroker().getBrokersAsString();
    }

    private static CancelProperties kafkaPropagation() {
        return new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.cancel.propagation", "kafka", "ripcord.cancel.instance-id", "identity-gateway")))
                .bindOrCreate("ripcord.cancel", Bindable.of(CancelProperties.class));
    }
}
