package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.MessageHeaders;

/**
 * Trace context on cancel records: W3C {@value #TRACEPARENT} (and whatever else the service's propagator writes,
 * such as {@code tracestate} or {@code baggage}) as Kafka record headers.
 *
 * <p>Why not the binder's own observation: a cancel is sent on {@link KafkaSendQueue}'s thread, where no span is
 * current, so the producer's observation would start a new trace. {@link #capture()} runs on the caller's thread
 * (the gateway's event loop, where the request's span is in scope) and the headers travel with the message.
 * Values are bytes, so the binder maps them to record headers verbatim (a String would be JSON-quoted).
 */
final class TraceHeaders {

    /** The W3C trace-context header. */
    static final String TRACEPARENT = "traceparent";
    /** No tracing in this service: nothing captured, nothing continued. */
    static final TraceHeaders NONE = new TraceHeaders(Tracer.NOOP, Propagator.NOOP);

    private final Tracer tracer;
    private final Propagator propagator;

    TraceHeaders(Tracer tracer, Propagator propagator) {
        this.tracer = tracer;
        this.propagator = propagator;
    }

    /** The current span's context as headers; empty when no span is current on this thread. */
    Map<String, byte[]> capture() {
        TraceContext current = tracer.currentTraceContext().context();
        if (current == null) {
            return Map.of();
        }
        Map<String, byte[]> headers = new LinkedHashMap<>();
        propagator.inject(current, headers, (carrier, key, value) ->
                carrier.put(key, value.getBytes(StandardCharsets.UTF_8)));
        return headers;
    }

    /**
     * Continues the trace that {@code headers} carry: a span named {@code name}, current (and so in the MDC's
     * {@code traceId}/{@code spanId}) until the returned scope is closed. Headers without trace context give no span.
     *
     * <p>Used on both sides of the topic. On the queue's thread, around the send ({@link Span.Kind#PRODUCER}): the
     * binder's output channel is observed by Spring Integration (StreamBridge registers the observation registry on
     * it), and that observation writes its own {@code traceparent}, replacing ours; with our span current, its span
     * is a child of ours, so the record still carries the caller's trace. On the consumer's thread
     * ({@link Span.Kind#CONSUMER}): the abort handler and its log lines run in the publisher's trace.
     */
    Continued continueTrace(MessageHeaders headers, String name, Span.Kind kind) {
        if (headerText(headers, TRACEPARENT) == null) {
            return Continued.NONE;
        }
        Span span = propagator.extract(headers, TraceHeaders::headerText).name(name).kind(kind).start();
        return new Continued(span, tracer.withSpan(span));
    }

    private static @Nullable String headerText(MessageHeaders headers, String key) {
        return switch (headers.get(key)) {
            case null -> null;
            case byte[] bytes -> new String(bytes, StandardCharsets.UTF_8);
            case Object value -> value.toString();
        };
    }

    /** A continued trace: closing it ends the span and takes it out of scope. */
    static final class Continued implements AutoCloseable {

        static final Continued NONE = new Continued(null, null);

        private final @Nullable Span span;
        private final Tracer.@Nullable SpanInScope scope;

        private Continued(@Nullable Span span, Tracer.@Nullable SpanInScope scope) {
            this.span = span;
            this.scope = scope;
        }

        @Override
        public void close() {
            if (scope != null) {
                scope.close();
            }
            if (span != null) {
                span.end();
            }
        }
    }
}
