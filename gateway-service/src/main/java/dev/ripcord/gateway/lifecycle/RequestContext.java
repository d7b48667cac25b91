package dev.ripcord.gateway.lifecycle;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.protocol.CancelReason;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The gateway's context for one client request: the parent of its prefill and decode legs.
 *
 * <p>Each leg is {@linkplain #link linked} at creation: cancelling the context cancels every linked leg (its
 * internal HTTP exchange is disposed, which the worker sees as its stream closing — the in-band path), and a leg
 * that ends on its own revokes its link, so nothing is retained once the request is over. This is the lifecycle
 * the bug report's stack lacked: there, the prefill leg got a context of its own, with the same ID but no link to
 * the client's, so killing the client's context left the prefill running.
 *
 * <pre>
 *  from \ to   ACTIVE  COMPLETED  CANCELLED
 *  ACTIVE               ✓           ✓        (first of complete() / cancel() wins)
 *  COMPLETED, CANCELLED: terminal
 * </pre>
 */
public final class RequestContext {

    public enum State { ACTIVE, COMPLETED, CANCELLED }

    private final String requestId;
    private final String owner;
    private final AtomicReference<State> state = new AtomicReference<>(State.ACTIVE);
    private final Sinks.One<CancelReason> cancelled = Sinks.one();
    private final AtomicInteger liveLinks;
    private volatile CancelReason reason;

    RequestContext(String requestId, String owner, AtomicInteger liveLinks) {
        this.requestId = requestId;
        this.owner = owner;
        this.liveLinks = liveLinks;
    }

    public String requestId() {
        return requestId;
    }

    /**
     * The identity of the API key that started the request ({@code key-…}, or {@code anonymous} when authentication
     * is off): the only caller who may cancel it.
     */
    public String owner() {
        return owner;
    }

    public State state() {
        return state.get();
    }

    /** The reason of the cancel that won, or null. */
    public CancelReason cancelReason() {
        return reason;
    }

    /**
     * Links a leg to this context: the returned Flux ends (cancelling {@code leg} upstream) as soon as the context
     * is cancelled; when the leg ends for any reason, its link is revoked.
     */
    public <T> Flux<T> link(Flux<T> leg) {
        return Flux.defer(() -> {
            liveLinks.incrementAndGet();
            return leg.takeUntilOther(cancelled.asMono())
                    .doFinally(signal -> liveLinks.decrementAndGet());
        });
    }

    /** Emits the reason once the context is cancelled; never emits if it completes. */
    public Mono<CancelReason> cancelled() {
        return cancelled.asMono();
    }

    /** Cancels the context and every linked leg; returns whether this call did it (the first cancel wins). */
    boolean cancel(CancelReason why) {
        if (!state.compareAndSet(State.ACTIVE, State.CANCELLED)) {
            return false;
        }
        reason = why;
        cancelled.tryEmitValue(why);
        return true;
    }

    /** Marks the request finished; later cancels are no-ops. Returns whether this call did it. */
    boolean complete() {
        if (state.compareAndSet(State.ACTIVE, State.COMPLETED)) {
            cancelled.tryEmitEmpty();
            return true;
        }
        return false;
    }
}
