package dev.ripcord.gateway.generation;

import java.util.concurrent.atomic.AtomicReference;

import org.jspecify.annotations.Nullable;
import reactor.util.context.ContextView;

import dev.ripcord.protocol.CancelReason;

/**
 * Why the OpenAI surface cancelled a generation, for the {@link TokenGenerator} to read when its subscription is
 * cancelled. A Reactive Streams cancel carries no reason, so the edge records one in the Reactor context of the
 * generation, under {@value #CONTEXT_KEY}, before it cancels.
 *
 * <p>Contract: a generator that reports why it was cancelled reads {@link #of(ContextView)} in its cancel handler.
 * When nothing was recorded the reason is {@link CancelReason#CLIENT_DISCONNECT}: the client went away, or a stop
 * string ended the generation. The streaming stall guard records {@link CancelReason#CLIENT_STALLED}. The first
 * recorded reason wins.
 */
public final class CancelCause {

    /** Reactor context key of the generation's {@link CancelCause}. */
    public static final String CONTEXT_KEY = "ripcord.cancelCause";

    private final AtomicReference<CancelReason> reason = new AtomicReference<>();
    private volatile @Nullable String finishReason;

    public CancelCause() {
    }

    /** Records {@code why}, unless a reason was recorded before; returns whether this call recorded it. */
    public boolean record(CancelReason why) {
        return reason.compareAndSet(null, why);
    }

    /** The recorded reason, or {@link CancelReason#CLIENT_DISCONNECT}. */
    public CancelReason reason() {
        CancelReason recorded = reason.get();
        return recorded == null ? CancelReason.CLIENT_DISCONNECT : recorded;
    }

    /**
     * Records that the edge cancels the generation because the answer is complete ({@code stop}: a stop string
     * matched), so the serving core can record how the request finished, not only that its legs were cancelled.
     */
    public void recordFinish(String finish) {
        finishReason = finish;
    }

    /** The finish reason the edge recorded for the generation running under {@code context}, or null. */
    public static @Nullable String finishOf(ContextView context) {
        return context.<CancelCause>getOrEmpty(CONTEXT_KEY).map(cause -> cause.finishReason).orElse(null);
    }

    /** The reason recorded for the generation running under {@code context}, or {@code CLIENT_DISCONNECT}. */
    public static CancelReason of(ContextView context) {
        return context.<CancelCause>getOrEmpty(CONTEXT_KEY).map(CancelCause::reason)
                .orElse(CancelReason.CLIENT_DISCONNECT);
    }
}
