package dev.ripcord.cancel.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import dev.ripcord.cancel.AbortHandler;
import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.InvalidCancelEventException;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cancel.Registration;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.support.KafkaHeaders;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * The module against a real broker, as services use it: a publish-only "gateway" and two consuming workers, each a
 * separate Spring Boot application context with its own registry, started once for the class. Subclasses supply the
 * broker (embedded KRaft, or a container where Docker runs). Every test uses fresh request IDs, so the tests share
 * the topic without seeing each other. Arrival is asynchronous, so assertions wait (generously) for counts and states,
 * never for wall-clock durations.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractCancelEventsKafkaTest {

    private static final String TOPIC = "ripcord.cancellations";
    private static final String DLT = "ripcord.cancellations.dlt";
    private static final Duration ARRIVAL = Duration.ofSeconds(60);

    /** An application with nothing but this library and a meter registry to read metrics from. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Service {

        @Bean
        SimpleMeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    record Abort(String requestId, CancelReason reason, CancelSource source) {
    }

    private final List<ConfigurableApplicationContext> contexts = new CopyOnWriteArrayList<>();
    private ConfigurableApplicationContext gateway;
    private ConfigurableApplicationContext workerA;
    private ConfigurableApplicationContext workerB;
    private String brokers;

    /** Called once, on the thread that runs {@code @BeforeAll}. */
    protected abstract String bootstrapServers();

    @BeforeAll
    void startServices() {
        brokers = bootstrapServers();
        gateway = start("gateway", "gw-1", false);
        workerA = start("decode", "worker-a", true);
        workerB = start("prefill", "worker-b", true);
    }

    @AfterAll
    void stopServices() {
        try {
            for (ConfigurableApplicationContext context : contexts) {
                registry(context).assertNoLiveRegistrations();
            }
        } finally {
            contexts.forEach(ConfigurableApplicationContext::close);
        }
    }

    private ConfigurableApplicationContext start(String service, String instanceId, boolean consume) {
        ConfigurableApplicationContext context = new SpringApplicationBuilder(Service.class)
                .web(WebApplicationType.NONE)
                .run("--spring.application.name=" + service,
                        "--spring.kafka.bootstrap-servers=" + brokers,
                        "--ripcord.cancel.instance-id=" + instanceId,
                        "--ripcord.cancel.consume=" + consume,
                        "--spring.main.banner-mode=off");
        contexts.add(context);
        return context;
    }

    @Test
    void onePublishedCancelReachesEveryWorker() throws Exception {
        String id = RequestIds.newId();
        List<Abort> abortsA = new CopyOnWriteArrayList<>();
        List<Abort> abortsB = new CopyOnWriteArrayList<>();
        Registration onA = registry(workerA).register(id, recorder(abortsA));
        Registration onB = registry(workerB).register(id, recorder(abortsB));

        publisher(gateway).publish(id, CancelReason.CLIENT_DISCONNECT).get(60, TimeUnit.SECONDS);

        await().atMost(ARRIVAL).until(() -> abortsA.size() == 1 && abortsB.size() == 1);
        assertThat(abortsA).containsExactly(new Abort(id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA));
        assertThat(abortsB).containsExactly(new Abort(id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA));
        assertThat(counter(gateway, "ripcord.cancel.published", "outcome", "acked")).isGreaterThanOrEqualTo(1);

        // Broadcast is by one consumer group per process.
        try (Admin admin = admin()) {
            assertThat(admin.listConsumerGroups().all().get(30, TimeUnit.SECONDS))
                    .extracting(ConsumerGroupListing::groupId)
                    .contains("ripcord-cancel.decode.worker-a", "ripcord-cancel.prefill.worker-b");
        }

        // A replay of the same cancel is consumed by both and changes nothing.
        double replaysA = counter(workerA, "ripcord.cancel.consumed", "outcome", "already_cancelled");
        double replaysB = counter(workerB, "ripcord.cancel.consumed", "outcome", "already_cancelled");
        publisher(gateway).publish(id, CancelReason.CLIENT_DISCONNECT).get(60, TimeUnit.SECONDS);
        await().atMost(ARRIVAL).until(() ->
                counter(workerA, "ripcord.cancel.consumed", "outcome", "already_cancelled") > replaysA
                        && counter(workerB, "ripcord.cancel.consumed", "outcome", "already_cancelled") > replaysB);
        assertThat(abortsA).hasSize(1);
        assertThat(abortsB).hasSize(1);
        onA.complete();
        onB.complete();
    }

    @Test
    void aPoisonRecordIsDeadLetteredAndTheNextRecordIsStillProcessed() throws Exception {
        String id = RequestIds.newId();
        byte[] garbage = ("\u0000garbage for " + id).getBytes(UTF_8);
        byte[] valid = CancelEventCodec.encode(CancelEvent.of(id, CancelReason.DEADLINE,
                new Origin("some-tool", "t1"), Instant.now()));
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            // Same key, so same partition: a delete marker (skipped), the poison, then the valid record.
            producer.send(new ProducerRecord<>(TOPIC, id.getBytes(UTF_8), null)).get(30, TimeUnit.SECONDS);
            producer.send(new ProducerRecord<>(TOPIC, id.getBytes(UTF_8), garbage)).get(30, TimeUnit.SECONDS);
            producer.send(new ProducerRecord<>(TOPIC, id.getBytes(UTF_8), valid)).get(30, TimeUnit.SECONDS);
        }

        await().atMost(ARRIVAL).until(() -> registry(workerA).isCancelled(id) && registry(workerB).isCancelled(id));

        // Spring for Apache Kafka's dead-letter convention: the original key, the standard kafka_dlt-* headers.
        List<ConsumerRecord<byte[], byte[]>> dead = awaitRecords(DLT, 0,
                record -> record.key() != null && id.equals(new String(record.key(), UTF_8)), 1);
        ConsumerRecord<byte[], byte[]> copy = dead.getFirst();
        assertThat(copy.value()).isEqualTo(garbage);
        assertThat(header(copy, KafkaHeaders.DLT_EXCEPTION_MESSAGE).orElseThrow()).startsWith("NOT_JSON: ");
        assertThat(header(copy, KafkaHeaders.DLT_EXCEPTION_FQCN))
                .contains(InvalidCancelEventException.class.getName());
        assertThat(header(copy, KafkaHeaders.DLT_ORIGINAL_TOPIC)).contains(TOPIC);
        int partition = ByteBuffer.wrap(copy.headers().lastHeader(KafkaHeaders.DLT_ORIGINAL_PARTITION).value()).getInt();
        long offset = ByteBuffer.wrap(copy.headers().lastHeader(KafkaHeaders.DLT_ORIGINAL_OFFSET).value()).getLong();
        assertThat(awaitRecords(TOPIC, partition, record -> record.offset() == offset, 1).getFirst().value())
                .as("the headers point at the poison record itself").isEqualTo(garbage);
        assertThat(header(copy, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP).orElseThrow())
                .isIn("ripcord-cancel.decode.worker-a", "ripcord-cancel.prefill.worker-b");
        assertThat(copy.headers().lastHeader(KafkaHeaders.DLT_ORIGINAL_TIMESTAMP)).isNotNull();
        assertThat(copy.headers().headers("ripcord-dlt-reason")).as("no custom headers any more").isEmpty();
        await().atMost(ARRIVAL).until(() -> counter(workerA, "ripcord.cancel.poison", "problem", "not_json") >= 1
                && counter(workerB, "ripcord.cancel.poison", "problem", "not_json") >= 1);
        assertThat(counter(workerA, "ripcord.cancel.consumed.skipped")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aCancelConsumedBeforeRegistrationAbortsOnRegistrationExactlyOnce() throws Exception {
        String id = RequestIds.newId();
        publisher(gateway).publish(id, CancelReason.CLIENT_CANCEL).get(60, TimeUnit.SECONDS);
        await().atMost(ARRIVAL).until(() -> registry(workerA).isCancelled(id));

        List<Abort> aborts = new CopyOnWriteArrayList<>();
        Registration registration = registry(workerA).register(id, recorder(aborts));

        assertThat(registration.isCancelled()).isTrue();
        assertThat(aborts).containsExactly(new Abort(id, CancelReason.CLIENT_CANCEL, CancelSource.TOMBSTONE));

        double replays = counter(workerA, "ripcord.cancel.consumed", "outcome", "already_cancelled");
        publisher(gateway).publish(id, CancelReason.CLIENT_CANCEL).get(60, TimeUnit.SECONDS);
        await().atMost(ARRIVAL).until(() ->
                counter(workerA, "ripcord.cancel.consumed", "outcome", "already_cancelled") > replays);
        assertThat(aborts).hasSize(1);
        registration.complete();
    }

    @Test
    void aWorkerStartedAfterTheCancelWasPublishedStillLearnsOfIt() throws Exception {
        String id = RequestIds.newId();
        publisher(gateway).publish(id, CancelReason.UPSTREAM_ERROR).get(60, TimeUnit.SECONDS);

        ConfigurableApplicationContext late = start("decode", "worker-late", true);
        try {
            await().atMost(ARRIVAL).until(() -> registry(late).isCancelled(id));
            List<Abort> aborts = new CopyOnWriteArrayList<>();
            try (Registration registration = registry(late).register(id, recorder(aborts))) {
                assertThat(registration.isCancelled()).isTrue();
            }
            assertThat(aborts).containsExactly(new Abort(id, CancelReason.UPSTREAM_ERROR, CancelSource.TOMBSTONE));
        } finally {
            late.close();
            contexts.remove(late);
        }
    }

    @Test
    void publishedRecordsAreKeyedByRequestIdWithTheJsonEventAndNoInternalHeaders() throws Exception {
        String id = RequestIds.newId();
        publisher(gateway).publish(id, CancelReason.SHUTDOWN).get(60, TimeUnit.SECONDS);

        List<ConsumerRecord<byte[], byte[]>> found = new ArrayList<>();
        for (int partition = 0; partition < 3 && found.isEmpty(); partition++) {
            found.addAll(readAll(TOPIC, partition, record -> id.equals(new String(record.key(), UTF_8))));
        }
        assertThat(found).hasSize(1);
        ConsumerRecord<byte[], byte[]> record = found.getFirst();
        CancelEvent event = CancelEventCodec.decode(record.value());
        assertThat(event.requestId()).isEqualTo(id);
        assertThat(event.reason()).isEqualTo(CancelReason.SHUTDOWN);
        assertThat(event.origin()).isEqualTo(new Origin("gateway", "gw-1"));
        assertThat(record.headers()).extracting(Header::key).doesNotContain("kafka_futureToken");
    }

    @Test
    void aCancelPublishedInsideASpanCarriesItsTraceparentAndTheConsumerContinuesThatTrace() throws Exception {
        String id = RequestIds.newId();
        Tracer workerTracer = workerA.getBean(Tracer.class);
        List<String> traceIdsAtAbort = new CopyOnWriteArrayList<>();
        Registration onA = registry(workerA).register(id, (requestId, reason, source) -> {
            Span current = workerTracer.currentSpan();
            traceIdsAtAbort.add(current == null ? "no span" : current.context().traceId());
        });

        Tracer tracer = gateway.getBean(Tracer.class);
        Span request = tracer.nextSpan().name("client request").start();
        CompletableFuture<Void> published;
        try (Tracer.SpanInScope ignored = tracer.withSpan(request)) {
            published = publisher(gateway).publish(id, CancelReason.CLIENT_DISCONNECT);
        } finally {
            request.end();
        }
        published.get(60, TimeUnit.SECONDS);

        List<ConsumerRecord<byte[], byte[]>> found = new ArrayList<>();
        for (int partition = 0; partition < 3 && found.isEmpty(); partition++) {
            found.addAll(readAll(TOPIC, partition, record -> id.equals(new String(record.key(), UTF_8))));
        }
        assertThat(found).hasSize(1);
        // W3C trace context (version 00, trace ID, parent span ID, flags) of the request's trace; the parent is the
        // send's span, a descendant of the request's span.
        String traceparent = header(found.getFirst(), "traceparent").orElseThrow();
        assertThat(traceparent).as("headers %s", describe(found.getFirst()))
                .matches("00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]")
                .startsWith("00-" + request.context().traceId() + "-");

        // The worker aborts inside a consumer span of the same trace, so its log lines carry that traceId.
        await().atMost(ARRIVAL).until(() -> traceIdsAtAbort.size() == 1);
        assertThat(traceIdsAtAbort).containsExactly(request.context().traceId());
        onA.complete();
    }

    @Test
    void topicsAreProvisionedCompactAndDelete() throws Exception {
        try (Admin admin = admin()) {
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            ConfigResource dlt = new ConfigResource(ConfigResource.Type.TOPIC, DLT);
            Map<ConfigResource, Config> configs = admin.describeConfigs(List.of(topic, dlt)).all()
                    .get(30, TimeUnit.SECONDS);
            assertThat(configs.get(topic).get("cleanup.policy").value()).isEqualTo("compact,delete");
            assertThat(configs.get(topic).get("retention.ms").value()).isEqualTo("3600000");
            assertThat(configs.get(topic).get("message.timestamp.type").value()).isEqualTo("LogAppendTime");
            assertThat(configs.get(dlt).get("cleanup.policy").value()).isEqualTo("compact,delete");
            Map<String, TopicDescription> topics = admin.describeTopics(List.of(TOPIC, DLT)).allTopicNames()
                    .get(30, TimeUnit.SECONDS);
            assertThat(topics.get(TOPIC).partitions()).hasSize(3);
            assertThat(topics.get(DLT).partitions()).hasSize(1);
        }
    }

    private static CancellationRegistry registry(ConfigurableApplicationContext context) {
        return context.getBean(CancellationRegistry.class);
    }

    private static CancelPublisher publisher(ConfigurableApplicationContext context) {
        return context.getBean(CancelPublisher.class);
    }

    private static double counter(ConfigurableApplicationContext context, String name, String... tags) {
        return Optional.ofNullable(context.getBean(MeterRegistry.class).find(name).tags(tags).counter())
                .map(c -> c.count()).orElse(0.0);
    }

    private static AbortHandler recorder(List<Abort> aborts) {
        return (id, reason, source) -> aborts.add(new Abort(id, reason, source));
    }

    private static List<String> describe(ConsumerRecord<byte[], byte[]> record) {
        List<String> all = new ArrayList<>();
        record.headers().forEach(h -> all.add(h.key() + "=" + new String(h.value(), UTF_8)));
        return all;
    }

    private static Optional<String> header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? Optional.empty() : Optional.of(new String(header.value(), UTF_8));
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers));
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers,
                ProducerConfig.LINGER_MS_CONFIG, 0), new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Everything currently in one partition that matches, read from the beginning with a plain consumer. */
    private List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int partition,
            Predicate<ConsumerRecord<byte[], byte[]>> wanted) {
        List<ConsumerRecord<byte[], byte[]>> matching = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, partition);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            while (consumer.position(tp) < end) {
                consumer.poll(Duration.ofMillis(500)).records(tp).stream().filter(wanted).forEach(matching::add);
            }
        }
        return matching;
    }

    private List<ConsumerRecord<byte[], byte[]>> awaitRecords(String topic, int partition,
            Predicate<ConsumerRecord<byte[], byte[]>> wanted, int atLeast) {
        List<List<ConsumerRecord<byte[], byte[]>>> result = new ArrayList<>();
        await().atMost(ARRIVAL).until(() -> {
            List<ConsumerRecord<byte[], byte[]>> found = readAll(topic, partition, wanted);
            result.add(found);
            return found.size() >= atLeast;
        });
        return result.getLast();
    }
}
