package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.cancel.kafka.KafkaSendQueue.SendOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.MessageBuilder;

/**
 * {@link CancelPublisher} over the Spring Cloud Stream binding {@value CancelBindings#OUTPUT}. On the caller's thread
 * it only encodes the JSON (microseconds) and enqueues; the send happens on {@link KafkaSendQueue}'s thread.
 * Metrics: {@code ripcord.cancel.published{outcome=acked|gave_up|rejected}}, {@code ripcord.cancel.publish.latency}
 * (publish call to broker ack, acked records only) and {@code ripcord.cancel.publish.retries}.
 *
 * <p>Tracing: the record carries the caller's trace context as W3C {@code traceparent} (and {@code tracestate},
 * {@code baggage} where present) headers, captured on the caller's thread before the hand-off to the queue; see
 * {@link TraceHeaders}.
 */
final class KafkaCancelPublisher implements CancelPublisher {

    private static final Logger log = LoggerFactory.getLogger(KafkaCancelPublisher.class);

    private final KafkaSendQueue queue;
    private final Origin origin;
    private final Clock clock;
    private final Map<SendOutcome, Counter> published = new EnumMap<>(SendOutcome.class);
    private final Timer latency;
    private final TraceHeaders trace;

    KafkaCancelPublisher(KafkaSendQueue queue, Origin origin, Clock clock, MeterRegistry meters) {
        this(queue, origin, clock, meters, TraceHeaders.NONE);
    }

    KafkaCancelPublisher(KafkaSendQueue queue, Origin origin, Clock clock, MeterRegistry meters, TraceHeaders trace) {
        this.trace = trace;
        this.queue = queue;
        this.origin = origin;
        this.clock = clock;
        for (SendOutcome outcome : SendOutcome.values()) {
            published.put(outcome, Counter.builder("ripcord.cancel.published")
                    .description("Cancellations published, by outcome")
                    .tag("outcome", outcome.name().toLowerCase())
                    .register(meters));
        }
        latency = Timer.builder("ripcord.cancel.publish.latency")
                .description("From publish() to the broker's acknowledgement")
                .register(meters);
    }

    @Override
    public CompletableFuture<Void> publish(String requestId, CancelReason reason) {
        return publish(CancelEvent.now(requestId, reason, origin, clock));
    }

    @Override
    public CompletableFuture<Void> publish(CancelEvent event) {
        Objects.requireNonNull(event, "event");
        MessageBuilder<byte[]> builder = MessageBuilder.withPayload(CancelEventCodec.encode(event))
                .setHeader(KafkaHeaders.KEY, event.requestId().getBytes(StandardCharsets.UTF_8))
                .setHeader(MessageHeaders.CONTENT_TYPE, "application/json");
        // On the caller's thread: the send happens on the queue's thread, where the caller's span is not current.
        trace.capture().forEach(builder::setHeader);
        Message<byte[]> message = builder.build();
        long start = System.nanoTime();
        String requestId = event.requestId();
        // The outcome is reported on the queue's thread: the request ID goes into its MDC for these lines.
        return queue.submit(CancelBindings.OUTPUT, message, (outcome, attempts, error) -> RequestMdc.with(requestId, () -> {
            published.get(outcome).increment();
            switch (outcome) {
                case ACKED -> {
                    latency.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                    log.debug("published cancel requestId={} reason={} attempts={}", requestId, event.reason(),
                            attempts);
                }
                case GAVE_UP -> log.warn("cancel publish gave up requestId={} reason={} attempts={}: {}", requestId,
                        event.reason(), attempts, String.valueOf(error));
                case REJECTED -> log.warn("cancel publish rejected requestId={} reason={}: queue full or closed",
                        requestId, event.reason());
            }
        }));
    }
}
