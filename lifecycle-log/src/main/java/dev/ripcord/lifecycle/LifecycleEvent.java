package dev.ripcord.lifecycle;

import java.time.Instant;
import java.util.Objects;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;

/**
 * One fact of a request's lifecycle, as it travels on the lifecycle topic ({@code ripcord.lifecycle}): JSON (see
 * {@link LifecycleEventCodec}) keyed by the request ID, so that one request's events keep their order.
 *
 * <p>A service builds a <em>draft</em> with {@link #of} and the {@code with…} methods; its {@link LifecyclePublisher}
 * stamps the service, the instance, the instance's next sequence number and the time ({@link #stamped}). Sequence
 * numbers are per instance, from 1, gap-free as assigned: a gap in what a reader sees is an event lost, and the
 * publisher says so itself with a {@link LifecycleEventType#DROPPED} marker when it was its queue that dropped it.
 *
 * <p>The optional fields are null when they do not apply; which type fills which is listed on
 * {@link LifecycleEventType} and in docs/lifecycles.md.
 *
 * @param requestId       the request; null only for the publisher's own markers ({@link LifecycleEventType#DROPPED},
 *                        {@link LifecycleEventType#STOPPED}, {@link LifecycleEventType#HEARTBEAT})
 * @param service         {@code gateway}, {@code prefill} or {@code decode}
 * @param instance        the emitting process's instance ID (as on its cancel events' origin)
 * @param seq             per-instance sequence number, from 1; 0 in a draft
 * @param timestamp       when it happened, by the emitter's clock; null in a draft
 * @param type            what happened
 * @param outcome         how a request or job ended
 * @param reason          why it was cancelled or aborted
 * @param source          where the cancel reached the worker from
 * @param chunk           prefill chunk index, from 0
 * @param layer           the layer boundary where a prefill chunk or a decode step stopped for a cancel (layers
 *                        {@code [0, layer)} of it ran); absent when it stopped between chunks or steps
 * @param tokens          tokens (a chunk's, a prompt's, generated so far or in all)
 * @param step            decode step number
 * @param bytes           bytes a KV session moved
 * @param pages           KV pages reserved or freed
 * @param prefillInstance the prefill instance the gateway routed to
 * @param decodeInstance  the decode instance the gateway routed to
 * @param dropped         events a publisher dropped (DROPPED)
 * @param droppedFromSeq  lowest sequence number among them (DROPPED)
 * @param droppedToSeq    highest sequence number among them (DROPPED)
 * @param detail          free text: a phase, a finish reason, a session side, an error
 * @param incarnation     the emitting process's own random ID, new at every start: an instance ID survives a
 *                        restart (a pod's name, the local stack's {@code decode-2}) and its sequence numbers start
 *                        again from 1, so instance, incarnation and seq together name an event; null in a draft and
 *                        in events of builds that did not write it
 */
public record LifecycleEvent(String requestId, String service, String instance, long seq, Instant timestamp,
                             LifecycleEventType type, LifecycleOutcome outcome, CancelReason reason,
                             CancelSource source, Integer chunk, Integer layer, Integer tokens, Long step, Long bytes, Integer pages,
                             String prefillInstance, String decodeInstance, Long dropped, Long droppedFromSeq,
                             Long droppedToSeq, String detail, String incarnation) {

    /** The wire schema version this build writes and reads. */
    public static final int SCHEMA_VERSION = 1;

    /**
     * The {@code detail} of a gateway's {@code ADMITTED} event for a request of a warm-up (the traffic
     * {@code ./ripcord up} sends before it says it is up, marked with the gateway's warm-up header): the audit checks
     * such a request like any other, and leaves it out of its counts of the user's requests.
     */
    public static final String WARM_UP = "warm-up";

    public LifecycleEvent {
        Objects.requireNonNull(type, "type");
        if (!type.isMarker()) {
            Objects.requireNonNull(requestId, "requestId");
        }
    }

    /** A draft: what happened to {@code requestId}; the publisher stamps who, when and in which order. */
    public static LifecycleEvent of(LifecycleEventType type, String requestId) {
        return new LifecycleEvent(requestId, null, null, 0, null, type, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, null, null);
    }

    /** This draft, stamped by its publisher, a process of incarnation {@code incarnation}. */
    public LifecycleEvent stamped(String service, String instance, String incarnation, long seq, Instant timestamp) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    /** This draft, stamped by its publisher (its incarnation left as it is). */
    public LifecycleEvent stamped(String service, String instance, long seq, Instant timestamp) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    /** The record key on the topic: the request ID, or {@code instance:<id>} for a marker (DROPPED, STOPPED, HEARTBEAT). */
    public String key() {
        return requestId != null ? requestId : "instance:" + instance;
    }

    /** Whether this is a stamped event (from a publisher or a reader), not a draft. */
    public boolean isStamped() {
        return service != null && instance != null && timestamp != null && seq > 0;
    }

    public LifecycleEvent withOutcome(LifecycleOutcome outcome) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withCancel(CancelReason reason, CancelSource source) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withChunk(int chunk) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withLayer(int layer) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq,
                droppedToSeq, detail, incarnation);
    }

    public LifecycleEvent withTokens(int tokens) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withStep(long step) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withBytes(long bytes) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withPages(int pages) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withRoute(String prefillInstance, String decodeInstance) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    public LifecycleEvent withDropped(long dropped, long fromSeq, long toSeq) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, fromSeq, toSeq, detail, incarnation);
    }

    public LifecycleEvent withDetail(String detail) {
        return new LifecycleEvent(requestId, service, instance, seq, timestamp, type, outcome, reason, source, chunk,
                layer, tokens, step, bytes, pages, prefillInstance, decodeInstance, dropped, droppedFromSeq, droppedToSeq,
                detail, incarnation);
    }

    /** One line for humans: {@code decode/3f2a#417 12:00:00.123Z CANCEL_OBSERVED reason=... step=4}. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        s.append(service).append('/').append(instance).append('#').append(seq).append(' ').append(timestamp)
                .append(' ').append(type);
        if (requestId != null) {
            s.append(" requestId=").append(requestId);
        }
        append(s, "outcome", outcome);
        append(s, "reason", reason);
        append(s, "source", source);
        append(s, "chunk", chunk);
        append(s, "layer", layer);
        append(s, "tokens", tokens);
        append(s, "step", step);
        append(s, "bytes", bytes);
        append(s, "pages", pages);
        append(s, "prefill", prefillInstance);
        append(s, "decode", decodeInstance);
        append(s, "dropped", dropped);
        if (droppedFromSeq != null) {
            s.append(" seq=").append(droppedFromSeq).append("..").append(droppedToSeq);
        }
        append(s, "detail", detail);
        return s.toString();
    }

    private static void append(StringBuilder s, String name, Object value) {
        if (value != null) {
            s.append(' ').append(name).append('=').append(value);
        }
    }
}
