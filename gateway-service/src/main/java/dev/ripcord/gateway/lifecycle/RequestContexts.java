package dev.ripcord.gateway.lifecycle;

import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.TerminalFrames;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.lifecycle.LifecyclePublisher;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Every live request at this gateway, by owner and client ID, and the one place a cancel starts from: client
 * disconnect, explicit cancel, deadline. A cancel cancels the request's context (the in-band path: its legs' internal
 * exchanges are disposed) and, when {@code ripcord.cancel.propagation} includes Kafka, publishes one
 * {@link CancelEvent} keyed by the request's <em>internal</em> ID (the out-of-band path). Either path alone stops the
 * workers.
 *
 * <p><b>Identity.</b> {@link #open} mints the request's internal ID ({@link RequestIds#internalId}) before anything
 * about the request is sent or published, so every cancel, tombstone, worker job and lifecycle event of it names that
 * ID and no other request's. The client's ID is only ever resolved here, to the live request of the same owner (API
 * key identity): two keys may use the same ID at once, and a client may reuse an ID as soon as its request has ended;
 * a cancel of one never reaches the other.
 *
 * <p>It also answers the request API ({@code GET /v1/requests[/{id}]}): a caller's requests in flight here, and one
 * request by ID, live or among the last {@value #RECENTLY_ENDED} that ended here (so an owner can still read how a
 * request ended, and why, right after it did). Only the owner sees a request; for anyone else it does not exist.
 */
public final class RequestContexts {

    private static final Logger log = LoggerFactory.getLogger(RequestContexts.class);

    /** How many ended requests {@link #find} still answers for (the oldest is forgotten first). */
    public static final int RECENTLY_ENDED = 1024;

    /** A live or ended request as its owner names it: the owner's identity and the client's ID. */
    private record Key(String owner, String requestId) {
    }

    private final ConcurrentHashMap<Key, RequestContext> live = new ConcurrentHashMap<>();
    private final AtomicInteger liveLinks = new AtomicInteger();
    /** The last {@link #RECENTLY_ENDED} requests that ended here, oldest first; guarded by itself. */
    private final Map<Key, RequestSummary> ended = new LinkedHashMap<>(64, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, RequestSummary> eldest) {
            return size() > RECENTLY_ENDED;
        }
    };
    private final CancelPublisher publisher;
    private final CancelProperties cancelProperties;
    private final Origin origin;
    private final Clock clock;
    private final MeterRegistry meters;
    private final Duration maxDeadline;
    private final LifecyclePublisher lifecycle;

    /**
     * @param maxDeadline the server's maximum request time: the deadline of requests that give none, and the cap
     *                    of those that do
     */
    public RequestContexts(CancelPublisher publisher, CancelProperties cancelProperties, MeterRegistry meters,
                           Clock clock, Duration maxDeadline) {
        this(publisher, cancelProperties, meters, clock, maxDeadline, LifecyclePublisher.disabled());
    }

    /**
     * As above, recording each request on the lifecycle log: {@code ADMITTED} at {@link #open}, {@code ROUTED} for
     * each worker a leg is sent to ({@link #routed}), {@code FINISHED} with its one outcome at {@link #close}.
     */
    public RequestContexts(CancelPublisher publisher, CancelProperties cancelProperties, MeterRegistry meters,
                           Clock clock, Duration maxDeadline, LifecyclePublisher lifecycle) {
        this.lifecycle = lifecycle;
        this.maxDeadline = maxDeadline;
        this.publisher = publisher;
        this.cancelProperties = cancelProperties;
        this.origin = new Origin("gateway", cancelProperties.instanceId());
        this.clock = clock;
        this.meters = meters;
        Gauge.builder("ripcord.gateway.requests.active", live, ConcurrentHashMap::size)
                .description("client requests in flight at this gateway").register(meters);
        Gauge.builder("ripcord.gateway.legs.linked", liveLinks, AtomicInteger::get)
                .description("worker legs linked to a live request context").register(meters);
    }

    /**
     * Opens the context of a new request owned by {@link ApiKeys#ANONYMOUS}. It is cancelled ({@code DEADLINE}) when
     * its deadline passes: the
     * client's, or the server's maximum when the client gave none or a longer one.
     *
     * @throws DuplicateRequestException if a request with this ID is already in flight here
     */
    public RequestContext open(String requestId, Duration deadline) {
        return open(requestId, ApiKeys.ANONYMOUS, deadline);
    }

    /**
     * Opens the context of a new request owned by {@code owner} (the caller's API key identity, see
     * {@link ApiKeys#identity(reactor.util.context.ContextView)}); only that owner can {@linkplain #cancel(String,
     * String, CancelReason) cancel} it by ID. Otherwise as {@link #open(String, Duration)}.
     *
     * @throws DuplicateRequestException if a request with this ID is already in flight here
     */
    public RequestContext open(String requestId, String owner, Duration deadline) {
        return open(requestId, owner, deadline, "", 0);
    }

    /**
     * Opens the context of a new request owned by {@code owner} for {@code model} with a prompt of
     * {@code promptTokens} tokens (both reported by {@link #find}); otherwise as {@link #open(String, String, Duration)}.
     *
     * The context's {@linkplain RequestContext#internalId() internal ID} is minted here, fresh for every request.
     *
     * @throws DuplicateRequestException if a request of {@code owner} with this ID is already in flight here
     */
    public RequestContext open(String requestId, String owner, Duration deadline, String model, int promptTokens) {
        return open(requestId, owner, deadline, model, promptTokens, false);
    }

    /**
     * As {@link #open(String, String, Duration, String, int)}; a {@code warmUp} request's {@code ADMITTED} event
     * carries {@link LifecycleEvent#WARM_UP}, so that the audit leaves it out of the user's counts.
     */
    public RequestContext open(String requestId, String owner, Duration deadline, String model, int promptTokens,
                               boolean warmUp) {
        String internalId = RequestIds.internalId(requestId);
        RequestContext ctx = new RequestContext(requestId, internalId, owner, model, promptTokens,
                clock.instant().getEpochSecond(), liveLinks);
        if (live.putIfAbsent(new Key(owner, requestId), ctx) != null) {
            throw new DuplicateRequestException(requestId);
        }
        RequestMdc.with(requestId, () -> log.debug("requestId={} admitted as internalId={} owner={}", requestId,
                internalId, owner));
        LifecycleEvent admitted = LifecycleEvent.of(LifecycleEventType.ADMITTED, internalId);
        lifecycle.emit(warmUp ? admitted.withDetail(LifecycleEvent.WARM_UP) : admitted);
        Duration effective = deadline == null || deadline.compareTo(maxDeadline) > 0 ? maxDeadline : deadline;
        Disposable timer = Mono.delay(effective).subscribe(t -> cancel(ctx, CancelReason.DEADLINE));
        ctx.cancelled().doFinally(s -> timer.dispose()).subscribe();
        return ctx;
    }

    /** The request ended (any way): it leaves the table; a cancel after this is a no-op. */
    public void close(RequestContext ctx) {
        close(ctx, null, 0);
    }

    /**
     * The request ended: it leaves the table, and the lifecycle log records its one terminal outcome
     * ({@code FINISHED}): {@code CANCELLED} with the reason when its context was cancelled or {@code failure} is a
     * worker's cancel (or the deadline), {@code FAILED} for any other {@code failure} (also when the context was
     * cancelled with {@code UPSTREAM_ERROR} because of it: one choice failed and the others were cancelled),
     * {@code COMPLETED} otherwise.
     *
     * @param failure how the generation ended, if it ended in error
     * @param tokens  tokens the client was sent
     */
    public void close(RequestContext ctx, Throwable failure, int tokens) {
        ctx.complete();
        RequestSummary summary = ctx.summary();
        Key key = new Key(ctx.owner(), ctx.requestId());
        synchronized (ended) {
            ended.remove(key); // re-inserted last: the order is the order of ending
            ended.put(key, summary);
        }
        if (live.remove(key, ctx)) {
            // One line per request, however it ended (a client that went away included): the record of what it got.
            RequestMdc.with(ctx.requestId(), () -> log.info(
                    "requestId={} internalId={} ended state={} phase={} finishReason={} cancelReason={} "
                            + "promptTokens={} completionTokens={}", summary.requestId(), ctx.internalId(),
                    summary.stateName(), summary.phase().wireName(),
                    summary.finishReason(), summary.cancelReasonName(), summary.promptTokens(),
                    summary.completionTokens()));
            lifecycle.emit(finishedEvent(ctx, failure, tokens)); // once: only the close that removed it
        }
    }

    private static LifecycleEvent finishedEvent(RequestContext ctx, Throwable failure, int tokens) {
        LifecycleEvent finished = LifecycleEvent.of(LifecycleEventType.FINISHED, ctx.internalId()).withTokens(tokens);
        CancelReason reason = ctx.cancelReason();
        if (reason == CancelReason.ANSWER_COMPLETE) {
            return finished.withOutcome(LifecycleOutcome.COMPLETED); // the edge had the whole answer
        }
        if (reason == CancelReason.UPSTREAM_ERROR && failure != null) {
            // Part of the request failed and the rest was cancelled for it: the request failed.
            return finished.withOutcome(LifecycleOutcome.FAILED).withDetail(failure.getClass().getSimpleName());
        }
        if (reason != null) {
            return finished.withOutcome(LifecycleOutcome.CANCELLED).withCancel(reason, null);
        } else if (failure instanceof DeadlineExceededException) {
            return finished.withOutcome(LifecycleOutcome.CANCELLED).withCancel(CancelReason.DEADLINE, null);
        } else if (failure instanceof RequestCancelledException cancelled) {
            return finished.withOutcome(LifecycleOutcome.CANCELLED).withDetail(cancelled.getMessage());
        } else if (failure != null) {
            return finished.withOutcome(LifecycleOutcome.FAILED).withDetail(failure.getClass().getSimpleName());
        }
        return finished.withOutcome(LifecycleOutcome.COMPLETED);
    }

    /**
     * Binds the endpoint's {@code frames} to the lifecycle log: every terminal frame its writer writes to the client
     * from now on is one {@code TERMINAL_FRAME} under the request's internal ID ({@code detail}: the frame's kind),
     * however many it writes and whatever {@link #close} decided; the audit's {@code ONE_TERMINAL_OUTCOME} counts them.
     */
    public void recordTerminalFrames(RequestContext ctx, TerminalFrames frames) {
        String internalId = ctx.internalId();
        frames.bind(kind -> lifecycle.emit(LifecycleEvent.of(LifecycleEventType.TERMINAL_FRAME, internalId)
                .withDetail(kind)));
    }

    /**
     * A leg of the request was sent to a worker: {@code ROUTED} on the lifecycle log (one per attempt), under the
     * ID the worker knows the leg by ({@code wireId}: the internal ID, or a choice's).
     */
    public void routed(String wireId, String role, String instance) {
        lifecycle.emit(LifecycleEvent.of(LifecycleEventType.ROUTED, wireId).withRoute(
                "prefill".equals(role) ? instance : null, "decode".equals(role) ? instance : null));
    }

    /** {@code owner}'s requests in flight at this gateway, oldest first. */
    public List<RequestSummary> inFlight(String owner) {
        List<RequestSummary> mine = new ArrayList<>();
        for (RequestContext ctx : live.values()) {
            if (ctx.owner().equals(owner)) {
                mine.add(ctx.summary());
            }
        }
        mine.sort(Comparator.comparingLong(RequestSummary::created).thenComparing(RequestSummary::requestId));
        return mine;
    }

    /**
     * Request {@code requestId} as its owner {@code caller} may see it: in flight here, or among the last
     * {@value #RECENTLY_ENDED} that ended here. Empty if it is neither <em>or belongs to someone else</em>: the two
     * are deliberately indistinguishable.
     */
    public Optional<RequestSummary> find(String requestId, String caller) {
        Key key = new Key(caller, requestId);
        RequestContext ctx = live.get(key);
        if (ctx != null) {
            return Optional.of(ctx.summary());
        }
        synchronized (ended) {
            return Optional.ofNullable(ended.get(key));
        }
    }

    /**
     * Cancels every live request of this gateway with this client ID, whoever owns it: for the server's own cancels
     * (tests, operators), never for a client's. Empty if none is (or is no longer) in flight here.
     */
    public Optional<RequestContext> cancel(String requestId, CancelReason reason) {
        RequestContext first = null;
        for (RequestContext ctx : live.values()) {
            if (ctx.requestId().equals(requestId)) {
                cancel(ctx, reason);
                first = first == null ? ctx : first;
            }
        }
        return Optional.ofNullable(first);
    }

    /**
     * Cancels a live request of this gateway on behalf of {@code caller}: only if {@code caller} owns it. Empty if it
     * is not in flight here <em>or belongs to someone else</em>; the two are deliberately indistinguishable, so a
     * caller learns nothing about other keys' requests.
     */
    public Optional<RequestContext> cancel(String requestId, String caller, CancelReason reason) {
        RequestContext ctx = live.get(new Key(caller, requestId));
        if (ctx == null) {
            if (isLive(requestId)) {
                log.info("requestId={} apiKey={} cancel refused: no request of this key has this ID", requestId,
                        caller);
            }
            return Optional.empty();
        }
        cancel(ctx, reason);
        return Optional.of(ctx);
    }

    /** {@code owner}'s live request with this client ID at this gateway, if any. */
    public Optional<RequestContext> live(String requestId, String owner) {
        return Optional.ofNullable(live.get(new Key(owner, requestId)));
    }

    /** Whether a request with this client ID is in flight here, whoever owns it. */
    public boolean isLive(String requestId) {
        for (Key key : live.keySet()) {
            if (key.requestId().equals(requestId)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Cancels {@code ctx} (first cancel wins) and publishes the out-of-band event for its internal ID. Never blocks.
     * Returns whether this call cancelled it (false: it had completed, or was cancelled already).
     */
    public boolean cancel(RequestContext ctx, CancelReason reason) {
        if (!ctx.cancel(reason)) {
            return false;
        }
        meters.counter("ripcord.cancellations", "service", "gateway", "phase", "request",
                "path", reason.name().toLowerCase(Locale.ROOT)).increment();
        // The caller may be outside the request's pipeline (the cancel route, the deadline timer): its MDC is set here.
        RequestMdc.with(ctx.requestId(), () -> {
            log.info("requestId={} internalId={} cancelled at the gateway: {} (in-band: {}, kafka: {})",
                    ctx.requestId(), ctx.internalId(), reason, cancelProperties.propagation().inBand(),
                    cancelProperties.propagation().kafka());
            publish(ctx.internalId(), reason);
        });
        return true;
    }

    /**
     * The answer of {@code ctx} is complete at the edge (a stop string matched) before its workers finished it: the
     * request completes (not cancelled: nothing the client did, no error), and its legs are ended with
     * {@link CancelReason#ANSWER_COMPLETE}, in band and, with Kafka propagation, on the cancellations topic (a worker
     * that does not take in-band cancels must still stop). Never blocks.
     */
    public void finishEarly(RequestContext ctx) {
        if (!ctx.finishEarly()) {
            return;
        }
        RequestMdc.with(ctx.requestId(), () -> {
            log.debug("requestId={} internalId={} answer complete at the gateway; ending its legs", ctx.requestId(),
                    ctx.internalId());
            publish(ctx.internalId(), CancelReason.ANSWER_COMPLETE);
        });
    }

    /**
     * Publishes a cancel for a worker-facing ID ({@code requestId}: a request's internal ID, or one of its choices',
     * never a client's ID); no-op without Kafka.
     */
    public boolean publish(String requestId, CancelReason reason) {
        if (!cancelProperties.propagation().kafka()) {
            return false;
        }
        publisher.publish(CancelEvent.now(requestId, reason, origin, clock)).whenComplete((v, e) -> {
            if (e != null) {
                RequestMdc.with(requestId, () ->
                        log.warn("requestId={} cancel event not published: {}", requestId, e.toString()));
            }
        });
        return true;
    }

    public int liveRequests() {
        return live.size();
    }

    public int liveLinks() {
        return liveLinks.get();
    }

    /** A client reused the ID of a request still in flight. */
    public static final class DuplicateRequestException extends RuntimeException {
        DuplicateRequestException(String requestId) {
            super("request " + requestId + " is already in flight", null, false, false);
        }
    }
}
