package dev.ripcord.cancel.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.InvalidCancelEventException;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cancel.Registration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.MDC;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.KafkaNull;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/** The consumer function without a broker: what it does with valid and poison records. */
class CancelEventConsumerTest {

    private static final String TOPIC = "ripcord.cancellations";
    /** The records' timestamp (CreateTime): now, so that a tombstone's lifetime counted from it is all ahead. */
    private static final long RECORD_TIME = System.currentTimeMillis();

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final CancellationRegistry registry = new CancellationRegistry();
    private final List<Message<byte[]>> deadLettered = new CopyOnWriteArrayList<>();
    private final KafkaSendQueue queue = new KafkaSendQueue((binding, message) -> {
        assertThat(binding).isEqualTo(CancelBindings.DLT_OUTPUT);
        deadLettered.add(message);
        return CompletableFuture.completedFuture(null);
    }, 100, 1, Duration.ofMillis(1), Duration.ofSeconds(5), meters);
    private final CancelEventConsumer consumer = new CancelEventConsumer(registry,
            new DeadLetterPublisher(queue, "ripcord.cancellations.dlt", "ripcord-cancel.test.worker-1", meters), meters);

    @AfterEach
    void close() {
        queue.close();
        registry.assertNoLiveRegistrations();
    }

    @Test
    void aValidRecordCancelsTheRequestWithSourceKafka() {
        AtomicReference<CancelSource> source = new AtomicReference<>();
        try (Registration registration = registry.register("req-1", (id, reason, s) -> source.set(s))) {
            consumer.accept(record("req-1", CancelEventCodec.encode(event("req-1")), 7));
            assertThat(registration.isCancelled()).isTrue();
        }
        assertThat(source.get()).isEqualTo(CancelSource.KAFKA);
        assertThat(meters.counter("ripcord.cancel.consumed", "outcome", "aborted").count()).isEqualTo(1);
        assertThat(deadLettered).isEmpty();
    }

    @Test
    void theAbortHandlerRunsWithTheRequestIdInTheMdc() {
        AtomicReference<String> mdc = new AtomicReference<>();
        try (Registration ignored = registry.register("req-1", (id, reason, s) -> mdc.set(MDC.get("requestId")))) {
            consumer.accept(record("req-1", CancelEventCodec.encode(event("req-1")), 7));
        }
        assertThat(mdc.get()).isEqualTo("req-1");
        assertThat(MDC.get("requestId")).isNull();
    }

    @Test
    void aCancelForAnUnknownRequestBecomesATombstone() {
        consumer.accept(record("req-9", CancelEventCodec.encode(event("req-9")), 1));
        assertThat(registry.isCancelled("req-9")).isTrue();
        assertThat(meters.counter("ripcord.cancel.consumed", "outcome", "tombstoned").count()).isEqualTo(1);
    }

    @Test
    void aReplayedCancelPublishedLongerThanTheTtlAgoKeepsNoTombstone() {
        consumer.accept(record("req-9", CancelEventCodec.encode(event("req-9", Instant.now().minus(Duration.ofHours(1)))), 1));
        assertThat(registry.isCancelled("req-9")).isFalse();
        assertThat(registry.tombstones()).isZero();
        assertThat(meters.counter("ripcord.cancel.consumed", "outcome", "expired").count()).isEqualTo(1);
    }

    @Test
    void aRePublishedRecordIsAsOldAsItsEventAndAFastPublisherClockIsCappedByTheRecordTime() {
        Instant eventTime = Instant.parse("2026-11-29T21:00:00Z");
        CancelEvent event = event("req-1", eventTime);
        assertThat(CancelEventConsumer.publishedAt(event, eventTime.plusSeconds(3600).toEpochMilli()))
                .as("re-published an hour later: still as old as the event").isEqualTo(eventTime);
        assertThat(CancelEventConsumer.publishedAt(event, eventTime.minusSeconds(5).toEpochMilli()))
                .as("the publisher's clock ran 5 s ahead of the broker's").isEqualTo(eventTime.minusSeconds(5));
        assertThat(CancelEventConsumer.publishedAt(event, null)).isEqualTo(eventTime);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            not JSON                   | req-1 | <html>oops</html>                                 | NOT_JSON
            missing fields             | req-1 | {"schemaVersion":1,"requestId":"req-1"}           | MISSING_FIELD
            invalid request ID         | req-1 | {"schemaVersion":1,"requestId":"req 1"}           | INVALID_REQUEST_ID
            unsupported schema version | req-1 | {"schemaVersion":2,"requestId":"req-1","x":1}     | UNSUPPORTED_SCHEMA_VERSION
            """)
    void aPoisonRecordIsDeadLetteredWithItsBytesAndReasonAndConsumptionGoesOn(String description, String key,
            String value, String problem) {
        byte[] bytes = value.getBytes(UTF_8);

        consumer.accept(record(key, bytes, 41));
        consumer.accept(record("req-2", CancelEventCodec.encode(event("req-2")), 42));

        await().until(() -> deadLettered.size() == 1);
        Message<byte[]> dead = deadLettered.getFirst();
        assertThat(dead.getPayload()).isEqualTo(bytes);
        // Spring for Apache Kafka's DeadLetterPublishingRecoverer headers, not ours.
        assertThat(header(dead, KafkaHeaders.KEY)).isEqualTo(key);
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_MESSAGE)).startsWith(problem + ": ")
                .hasSizeGreaterThan(problem.length() + 2);
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_FQCN)).isEqualTo(InvalidCancelEventException.class.getName());
        assertThat(header(dead, KafkaHeaders.DLT_ORIGINAL_TOPIC)).isEqualTo(TOPIC);
        assertThat(ByteBuffer.wrap(bytes(dead, KafkaHeaders.DLT_ORIGINAL_PARTITION)).getInt()).isZero();
        assertThat(ByteBuffer.wrap(bytes(dead, KafkaHeaders.DLT_ORIGINAL_OFFSET)).getLong()).isEqualTo(41);
        assertThat(ByteBuffer.wrap(bytes(dead, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP)).getLong()).isEqualTo(RECORD_TIME);
        assertThat(header(dead, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP_TYPE)).isEqualTo(TimestampType.CREATE_TIME.toString());
        assertThat(header(dead, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)).isEqualTo("ripcord-cancel.test.worker-1");
        assertThat(dead.getHeaders().keySet()).noneMatch(name -> name.startsWith("ripcord-dlt-"));
        assertThat(meters.counter("ripcord.cancel.poison", "problem", problem.toLowerCase()).count()).isEqualTo(1);
        assertThat(registry.isCancelled("req-2")).as("the next record was still processed").isTrue();
        assertThat(registry.isCancelled("req-1")).isFalse();
    }

    @Test
    void aDeleteMarkerIsSkippedQuietlyNotDeadLettered() {
        consumer.accept(MessageBuilder.withPayload(KafkaNull.INSTANCE)
                .setHeader(KafkaHeaders.RECEIVED_TOPIC, TOPIC)
                .setHeader(KafkaHeaders.RECEIVED_KEY, "req-1".getBytes(UTF_8))
                .build());

        assertThat(meters.counter("ripcord.cancel.consumed.skipped").count()).isEqualTo(1);
        assertThat(deadLettered).isEmpty();
        assertThat(registry.isCancelled("req-1")).isFalse();
    }

    @Test
    void aRecordWhoseKeyIsNotItsRequestIdIsPoison() {
        consumer.accept(record("req-other", CancelEventCodec.encode(event("req-1")), 3));

        await().until(() -> deadLettered.size() == 1);
        assertThat(header(deadLettered.getFirst(), KafkaHeaders.DLT_EXCEPTION_MESSAGE)).startsWith("KEY_MISMATCH: ");
        assertThat(registry.isCancelled("req-1")).isFalse();
    }

    @Test
    void anAbortHandlerThatThrowsDoesNotEscapeToTheBinder() {
        Registration registration = registry.register("req-1", (id, reason, s) -> {
            throw new IllegalStateException("handler bug");
        });
        consumer.accept(record("req-1", CancelEventCodec.encode(event("req-1")), 7));
        assertThat(registration.isCancelled()).isTrue();
        registration.complete();
    }

    /** A cancel published just now: its tombstone lives the whole TTL. */
    private static CancelEvent event(String requestId) {
        return event(requestId, Instant.now());
    }

    private static CancelEvent event(String requestId, Instant timestamp) {
        return CancelEvent.of(requestId, CancelReason.CLIENT_DISCONNECT, new Origin("gateway", "g1"), timestamp);
    }

    @Test
    void theHighestOffsetHandledIsExportedPerPartitionWhateverTheRecordWas() {
        consumer.accept(record("req-a", CancelEventCodec.encode(event("req-a")), 7)); // a tombstone
        consumer.accept(record("req-b", "not json".getBytes(UTF_8), 9)); // poison, dead-lettered: handled too
        consumer.accept(record("req-c", CancelEventCodec.encode(event("req-c")), 8)); // older: the highest stays

        assertThat(meters.get("ripcord.cancel.consumed.offset").tag("partition", "0").gauge().value()).isEqualTo(9);
    }

    private static Message<byte[]> record(String key, byte[] value, long offset) {
        return MessageBuilder.withPayload(value)
                .setHeader(KafkaHeaders.RECEIVED_TOPIC, TOPIC)
                .setHeader(KafkaHeaders.RECEIVED_PARTITION, 0)
                .setHeader(KafkaHeaders.OFFSET, offset)
                .setHeader(KafkaHeaders.RECEIVED_KEY, key.getBytes(UTF_8))
                .setHeader(KafkaHeaders.RECEIVED_TIMESTAMP, RECORD_TIME)
                .setHeader(KafkaHeaders.TIMESTAMP_TYPE, "CREATE_TIME")
                .build();
    }

    private static byte[] bytes(Message<byte[]> message, String name) {
        return (byte[]) message.getHeaders().get(name);
    }

    private static String header(Message<byte[]> message, String name) {
        return new String((byte[]) message.getHeaders().get(name), UTF_8);
    }
}
