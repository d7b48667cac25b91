package dev.ripcord.gateway.lifecycle;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.protocol.CancelReason;
import org.jspecify.annotations.Nullable;
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
 *
 * <p>It also records what its owner may ask about it ({@link #summary()}, {@code GET /v1/requests/{id}}): the model,
 * the prompt's length, the {@linkplain RequestPhase phase} the legs' events show, and the tokens relayed so far.
 */
public final class RequestContext {

    public enum State { ACTIVE, COMPLETED, CANCELLED }

    private final String requestId;
    private final String internalId;
    private final String owner;
    private final String model;
    private final int promptTokens;
    private final long created;
    private final AtomicReference<State> state = new AtomicReference<>(State.ACTIVE);
    private final AtomicReference<RequestPhase> phase = new AtomicReference<>(RequestPhase.ADMISSION);
    private final AtomicInteger completionTokens = new AtomicInteger();
    private volatile @Nullable String finishReason;
    private final Sinks.One<CancelReason> cancelled = Sinks.one();
    private final AtomicInteger liveLinks;
    private volatile CancelReason reason;

    RequestContext(String requestId, String internalId, String owner, String model, int promptTokens, long created,
                   AtomicInteger liveLinks) {
        this.requestId = requestId;
        this.internalId = internalId;
        this.owner = owner;
        this.model = model;
        this.promptTokens = promptTokens;
        this.created = created;
        this.liveLinks = liveLinks;
    }

    /** The client's ID ({@code X-Request-Id}, its own or one generated for it): what the client sees and cancels by. */
    public String requestId() {
        return requestId;
    }

    /**
     * The request's internal ID, minted at admission ({@link dev.ripcord.protocol.RequestIds#internalId}): what its
     * workers, its cancel events, their tombstones and the lifecycle log know it by. Never reused, so a cancel
     * addressed to it can reach this request only.
     */
    public String internalId() {
        return internalId;
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
     *
     * <p>The cancel is let through only once the subscriber has asked for the leg's events. {@code takeUntilOther}
     * alone can complete its subscriber before that subscriber has received its subscription, when the cancel fires
     * on another thread (the deadline's timer, a cancel route) while the leg is still being subscribed. That breaks
     * the Reactive Streams order, and downstream operators then lost the end: a request cancelled by a 2 ms deadline
     * as its decode leg was being routed ended at the gateway, yet its client never got an answer. A subscriber asks
     * for events only after it has its subscription, so from the first request on the cancel's completion is
     * ordered; a cancel before it waits (the context remembers it) and lands at that first request.
     */
    public <T> Flux<T> link(Flux<T> leg) {
        return Flux.defer(() -> {
            liveLinks.incrementAndGet();
            Sinks.Empty<Void> requested = Sinks.empty();
            return leg.takeUntilOther(requested.asMono().then(cancelled.asMono()))
                    .doOnRequest(n -> requested.tryEmitEmpty())
                    .doFinally(signal -> liveLinks.decrementAndGet());
        });
    }

    /** The furthest phase the request reached. */
    public RequestPhase phase() {
        return phase.get();
    }

    /**
     * Moves the request forward to {@code next}; returns whether it moved. A move back (events of the two legs
     * arrive on two connections, in either order) or to the same phase changes nothing.
     */
    public boolean moveTo(RequestPhase next) {
        RequestPhase current;
        do {
            current = phase.get();
            if (!current.canMoveTo(next)) {
                return false;
            }
        } while (!phase.compareAndSet(current, next));
        return true;
    }

    /**
     * Records one token relayed to the client (the request is then in {@link RequestPhase#DECODE}); {@code finish}
     * is the last token's finish reason ({@code stop}, {@code length}), null for the others.
     */
    public void tokenRelayed(@Nullable String finish) {
        completionTokens.incrementAndGet();
        moveTo(RequestPhase.DECODE);
        if (finish != null) {
            finishReason = finish;
        }
    }

    /**
     * Records how the answer finished when the edge ended it early because it was complete (a stop string matched:
     * {@code stop}); a finish reason recorded before stays.
     */
    public void finishedAtTheEdge(String finish) {
        if (finishReason == null) {
            finishReason = finish;
        }
    }

    /** Tokens relayed to the client so far. */
    public int completionTokens() {
        return completionTokens.get();
    }

    /** What the owner may learn about the request now. */
    public RequestSummary summary() {
        State now = state.get();
        String finish = finishReason;
        if (finish == null && now == State.CANCELLED) {
            finish = "abort";
        }
        return new RequestSummary(requestId, owner, model, created, now, phase.get(), promptTokens,
                completionTokens.get(), finish, now == State.CANCELLED ? reason : null);
    }

    /**
     * Emits the reason once the context is cancelled (or its answer completed early at the edge:
     * {@link CancelReason#ANSWER_COMPLETE}); never emits if it completes otherwise.
     */
    public Mono<CancelReason> cancelled() {
        return cancelled.asMono();
    }

    /** Cancels the context and every linked leg; returns whether this call did it (the first cancel wins). */
    boolean cancel(CancelReason why) {
        // The reason is set before the state, so whoever sees CANCELLED sees its reason too (a close racing this
        // cancel would otherwise read no reason and record the request as COMPLETED). The lock makes the check and
        // the two writes one step against complete(); it is taken once or twice per request, never contended long.
        synchronized (this) {
            if (state.get() != State.ACTIVE) {
                return false;
            }
            reason = why;
            state.set(State.CANCELLED);
        }
        cancelled.tryEmitValue(why);
        return true;
    }

    /**
     * The answer is complete at the edge before the workers finished it (a stop string matched): the request
     * completes, and its legs are ended with {@link CancelReason#ANSWER_COMPLETE}, which the workers are told, as
     * for a cancel. Returns whether this call ended it (false: it had completed, or was cancelled, already).
     */
    boolean finishEarly() {
        synchronized (this) {
            if (state.get() != State.ACTIVE) {
                return false;
            }
            reason = CancelReason.ANSWER_COMPLETE;
            state.set(State.COMPLETED);
        }
        cancelled.tryEmitValue(CancelReason.ANSWER_COMPLETE);
        return true;
    }

    /** Marks the request finished; later cancels are no-ops. Returns whether this call did it. */
    boolean complete() {
        synchronized (this) {
            if (state.get() != State.ACTIVE) {
                return false;
            }
            state.set(State.COMPLETED);
        }
        cancelled.tryEmitEmpty();
        return true;
    }
}
