package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.Consumer;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.CancelOutcome;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.InvalidCancelEventException;
import dev.ripcord.cancel.InvalidCancelEventException.Problem;
import dev.ripcord.cancel.kafka.DeadLetterPublisher.Poison;
import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.tracing.Span;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.record.TimestampType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.KafkaNull;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;

/**
 * The {@value CancelBindings#CONSUMER_FUNCTION} function: one consumed record in, one
 * {@link CancellationRegistry#cancel} (source {@link CancelSource#KAFKA}) out.
 *
 * <p>It takes raw bytes and decodes them itself, so a poison record (not JSON, missing fields, invalid ID, unknown
 * schema version, key that is not the request ID) never reaches the binder's error handling and its retries: it is
 * logged at WARN with its coordinates, counted ({@code ripcord.cancel.poison{problem}}), handed to the
 * {@link DeadLetterPublisher}, and the function returns normally so consumption goes on with the next record. Nothing
 * thrown here escapes to the binder. A record with a null value (a delete marker, which a compacted topic allows) is
 * skipped quietly and counted in {@code ripcord.cancel.consumed.skipped}; the function is typed {@code Message<?>}
 * rather than {@code Message<byte[]>} because the binder cannot convert such a record's {@code KafkaNull} payload to
 * bytes and would log an ERROR before we ever saw it. While a valid record is handled, MDC {@value RequestMdc#KEY} is set,
 * so the abort handler's log lines carry the request ID too, and a record with a {@code traceparent} header is handled
 * in a consumer span of the publisher's trace (so those lines carry its {@code traceId} as well).
 *
 * <p>The registry is told when the cancel was <em>published</em> ({@link #publishedAt}), so that a tombstone's lifetime
 * and the replay window are both measured from publication, never from when this process consumed the record: a
 * replayed cancel older than the tombstone TTL is {@link CancelOutcome#EXPIRED} and changes nothing.
 */
final class CancelEventConsumer implements Consumer<Message<?>> {

    private static final Logger log = LoggerFactory.getLogger(CancelEventConsumer.class);

    private final CancellationRegistry registry;
    private final DeadLetterPublisher deadLetters;
    private final Map<CancelOutcome, Counter> consumed = new EnumMap<>(CancelOutcome.class);
    private final Map<Problem, Counter> poison = new EnumMap<>(Problem.class);
    private final Counter failures;
    private final Counter deleteMarkers;
    private final Timer deliveryToAbort;
    private final TraceHeaders trace;
    private final MeterRegistry meters;
    /** Per partition, the highest offset this process has handled (applied, skipped or dead-lettered). */
    private final java.util.concurrent.ConcurrentMap<Integer, java.util.concurrent.atomic.AtomicLong> handled =
            new java.util.concurrent.ConcurrentHashMap<>();

    CancelEventConsumer(CancellationRegistry registry, DeadLetterPublisher deadLetters, MeterRegistry meters) {
        this(registry, deadLetters, meters, TraceHeaders.NONE);
    }

    CancelEventConsumer(CancellationRegistry registry, DeadLetterPublisher deadLetters, MeterRegistry meters,
                        TraceHeaders trace) {
        this.trace = trace;
        this.meters = meters;
        this.registry = registry;
        this.deadLetters = deadLetters;
        for (CancelOutcome outcome : CancelOutcome.values()) {
            consumed.put(outcome, Counter.builder("ripcord.cancel.consumed")
                    .description("Cancellations consumed, by what the registry did with them")
                    .tag("outcome", outcome.name().toLowerCase())
                    .register(meters));
        }
        for (Problem problem : Problem.values()) {
            poison.put(problem, Counter.builder("ripcord.cancel.poison")
                    .description("Unreadable records sent to the dead-letter topic")
                    .tag("problem", problem.name().toLowerCase())
                    .register(meters));
        }
        failures = Counter.builder("ripcord.cancel.consume.failures")
                .description("Valid records whose handling threw").register(meters);
        deleteMarkers = Counter.builder("ripcord.cancel.consumed.skipped")
                .description("Records with a null value (delete markers), skipped").register(meters);
        deliveryToAbort = Timer.builder("ripcord.cancel.kafka.delivery")
                .description("the event's timestamp (publisher's clock) -> a live request here aborted by it")
                .publishPercentileHistogram()
                .register(meters);
    }

    @Override
    public void accept(Message<?> message) {
        MessageHeaders headers = message.getHeaders();
        String topic = String.valueOf(headers.get(KafkaHeaders.RECEIVED_TOPIC));
        int partition = headers.get(KafkaHeaders.RECEIVED_PARTITION) instanceof Integer p ? p : -1;
        long offset = headers.get(KafkaHeaders.OFFSET) instanceof Long o ? o : -1L;
        try {
            handle(message, headers, topic, partition, offset);
        } finally {
            handled(partition, offset);
        }
    }

    /**
     * {@code ripcord.cancel.consumed.offset{partition}}: the highest offset of each partition this process has
     * handled. Records of a partition are handled in order, so every cancel published there before that offset has
     * reached this worker's registry: a reader who knows the offset of a record it published (an operator's cancel,
     * the fault bench's markers) knows when this worker has seen it, which a count of records consumed cannot say.
     */
    private void handled(int partition, long offset) {
        if (partition < 0 || offset < 0) {
            return;
        }
        handled.computeIfAbsent(partition, p -> {
            java.util.concurrent.atomic.AtomicLong highest = new java.util.concurrent.atomic.AtomicLong(-1);
            io.micrometer.core.instrument.Gauge.builder("ripcord.cancel.consumed.offset", highest,
                            java.util.concurrent.atomic.AtomicLong::get)
                    .description("Highest offset of the partition this process has handled")
                    .tag("partition", String.valueOf(p)).register(meters);
            return highest;
        }).accumulateAndGet(offset, Math::max);
    }

    private void handle(Message<?> message, MessageHeaders headers, String topic, int partition, long offset) {
        byte[] key = keyBytes(headers.get(KafkaHeaders.RECEIVED_KEY));
        byte[] value = switch (message.getPayload()) {
            case byte[] bytes -> bytes;
            case String text -> text.getBytes(StandardCharsets.UTF_8); // a service configured a String deserializer
            case KafkaNull ignored -> null;
            default -> String.valueOf(message.getPayload()).getBytes(StandardCharsets.UTF_8);
        };
        if (value == null) {
            deleteMarkers.increment();
            log.debug("skipping delete marker (null value) at {}-{}@{}", topic, partition, offset);
            return;
        }

        CancelEvent event;
        try {
            event = CancelEventCodec.decode(value);
            if (key != null && !Arrays.equals(key, event.requestId().getBytes(StandardCharsets.UTF_8))) {
                throw new InvalidCancelEventException(Problem.KEY_MISMATCH,
                        "record key '%s' is not the request ID".formatted(printable(key)));
            }
        } catch (InvalidCancelEventException e) {
            handlePoison(new Poison(topic, partition, offset, timestamp(headers), timestampType(headers), key, value,
                    e.problem().name(), e.getMessage()), e);
            return;
        }

        MDC.put(RequestMdc.KEY, event.requestId());
        // The publisher's trace goes on: this handling (and the abort handler it runs) logs with its traceId.
        try (TraceHeaders.Continued ignored = trace.continueTrace(headers, "ripcord.cancel consume", Span.Kind.CONSUMER)) {
            Instant publishedAt = publishedAt(event, headers.get(KafkaHeaders.RECEIVED_TIMESTAMP));
            CancelOutcome outcome = registry.cancel(event.requestId(), event.reason(), CancelSource.KAFKA, publishedAt);
            consumed.get(outcome).increment();
            if (outcome == CancelOutcome.ABORTED) {
                // Only first deliveries that stopped work: replays after a restart would read as minutes of latency.
                Duration delivery = Duration.between(event.timestamp(), Instant.now());
                if (!delivery.isNegative()) {
                    deliveryToAbort.record(delivery);
                }
            }
            log.debug("consumed cancel requestId={} reason={} origin={} at {}-{}@{}: {}", event.requestId(),
                    event.reason(), event.origin(), topic, partition, offset, outcome);
        } catch (RuntimeException e) {
            failures.increment();
            log.warn("handling cancel requestId={} from {}-{}@{} failed; skipping it", event.requestId(), topic,
                    partition, offset, e);
        } finally {
            MDC.remove(RequestMdc.KEY);
        }
    }

    private void handlePoison(Poison record, InvalidCancelEventException problem) {
        poison.get(problem.problem()).increment();
        // The key is usually the request ID even when the value is garbage: worth having in the log line and MDC.
        String keyText = record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8);
        boolean keyIsId = RequestIds.isValid(keyText);
        if (keyIsId) {
            MDC.put(RequestMdc.KEY, keyText);
        }
        try {
            log.warn("poison record at {}-{}@{} requestId={} ({}: {}); dead-lettering it and moving on",
                    record.topic(), record.partition(), record.offset(), keyIsId ? keyText : "?",
                    problem.problem(), problem.getMessage());
            deadLetters.deadLetter(record);
        } catch (RuntimeException e) {
            log.warn("could not dead-letter poison record {}", record.coordinates(), e);
        } finally {
            if (keyIsId) {
                MDC.remove(RequestMdc.KEY);
            }
        }
    }

    private static long timestamp(MessageHeaders headers) {
        return headers.get(KafkaHeaders.RECEIVED_TIMESTAMP) instanceof Long t ? t : ConsumerRecord.NO_TIMESTAMP;
    }

    private static TimestampType timestampType(MessageHeaders headers) {
        return headers.get(KafkaHeaders.TIMESTAMP_TYPE) instanceof String type
                ? switch (type) {
                    case "CREATE_TIME" -> TimestampType.CREATE_TIME;
                    case "LOG_APPEND_TIME" -> TimestampType.LOG_APPEND_TIME;
                    default -> TimestampType.NO_TIMESTAMP_TYPE;
                }
                : TimestampType.NO_TIMESTAMP_TYPE;
    }

    /**
     * When the cancel was published: the earlier of the event's own timestamp (the publisher's clock, kept by a
     * re-publish such as {@code ripcord cancels replay}) and the record's (the broker's append time on our topic), so
     * that neither a re-published old cancel nor a publisher whose clock runs ahead makes a tombstone outlive its TTL.
     */
    static Instant publishedAt(CancelEvent event, Object recordTimestamp) {
        if (recordTimestamp instanceof Long millis && millis >= 0) {
            Instant record = Instant.ofEpochMilli(millis);
            return record.isBefore(event.timestamp()) ? record : event.timestamp();
        }
        return event.timestamp();
    }

    private static byte[] keyBytes(Object key) {
        return switch (key) {
            case null -> null;
            case byte[] bytes -> bytes;
            default -> String.valueOf(key).getBytes(StandardCharsets.UTF_8);
        };
    }

    private static String printable(byte[] key) {
        String text = new String(key, StandardCharsets.UTF_8);
        return text.length() > 64 ? text.substring(0, 64) + "..." : text;
    }
}
