package dev.ripcord.worker.http;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import dev.ripcord.cancel.CancelOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.worker.DrainSwitch;
import dev.ripcord.worker.WorkerContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.ResolvableType;
import org.springframework.core.codec.Encoder;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ReactiveHttpOutputMessage;
import org.springframework.http.codec.EncoderHttpMessageWriter;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.BodyInserter;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The internal HTTP edge both workers share: status, journal, the prefix cache's figures and clear, the in-band cancel route, the job stream whose early
 * close is the in-band signal, and the mapping of refusals to 400/409/503. A worker adds only its
 * {@link WorkerEndpoint} (its submit route: body type, validation and submission); {@code WorkerAutoConfiguration} serves it.
 *
 * <h2>In-band cancellation</h2>
 * The gateway tells a worker why it cancels before it closes the stream: {@code POST}
 * {@value InternalApi#CANCEL}{@code ?reason=DEADLINE} reaches the registry with that reason and source
 * {@code IN_BAND}. The stream's close afterwards is then a replay. A stream that closes with no reason given first
 * (the gateway vanished, the connection broke) is recorded as exactly that: {@link CancelReason#CONNECTION_CLOSED}.
 * Both only when {@code ripcord.cancel.propagation} includes in-band.
 *
 * <h2>A closed stream without in-band propagation</h2>
 * With {@code ripcord.cancel.propagation=kafka} the gateway's cancels reach a worker on Kafka only, and a closed
 * stream is not a cancel by itself. But a gateway that crashes (or loses its connection to the worker for good)
 * publishes nothing, and its jobs would run on for nobody. So a stream that closes before its job ended starts a
 * grace ({@code ripcord.worker.closed-stream-grace}, default 5 s), in which the gateway's Kafka cancel, or the job's
 * own end, may still come; if neither did, the job is aborted with {@link CancelReason#CONNECTION_CLOSED}, source
 * {@code IN_BAND} (the closed connection). The registry makes whichever comes second a replay: one abort either way.
 */
public final class WorkerRoutes {

    private static final Logger log = LoggerFactory.getLogger(WorkerRoutes.class);
    private static final MediaType NDJSON = MediaType.parseMediaType(InternalApi.NDJSON);

    private final WorkerContext context;
    private final CancelProperties cancel;
    private final Duration retryAfter;
    private final DrainSwitch drainSwitch;
    private final Duration closedStreamGrace;
    private final Scheduler timer;

    /** The default grace after a closed stream without in-band propagation, on Reactor's parallel scheduler. */
    public WorkerRoutes(WorkerContext context, CancelProperties cancel, Duration retryAfter) {
        this(context, cancel, retryAfter, DrainSwitch.detached());
    }

    public WorkerRoutes(WorkerContext context, CancelProperties cancel, Duration retryAfter,
                        DrainSwitch drainSwitch) {
        this(context, cancel, retryAfter, drainSwitch, DEFAULT_CLOSED_STREAM_GRACE, Schedulers.parallel());
    }

    public WorkerRoutes(WorkerContext context, CancelProperties cancel, Duration retryAfter,
                        Duration closedStreamGrace, Scheduler timer) {
        this(context, cancel, retryAfter, DrainSwitch.detached(), closedStreamGrace, timer);
    }

    /**
     * @param drainSwitch       once on, a job is refused here, before its scheduler sees it
     * @param closedStreamGrace without in-band propagation, how long a job whose stream the gateway closed waits for
     *                          a cancel on Kafka (or its own end) before it is aborted
     * @param timer             runs that grace's end
     */
    public WorkerRoutes(WorkerContext context, CancelProperties cancel, Duration retryAfter,
                        DrainSwitch drainSwitch, Duration closedStreamGrace, Scheduler timer) {
        this.context = context;
        this.cancel = cancel;
        this.retryAfter = retryAfter;
        this.drainSwitch = drainSwitch;
        this.closedStreamGrace = closedStreamGrace;
        this.timer = timer;
    }

    /** {@code ripcord.worker.closed-stream-grace}'s default. */
    public static final Duration DEFAULT_CLOSED_STREAM_GRACE = Duration.ofSeconds(5);

    /**
     * The worker's whole internal API: status, journal, in-band cancel, drain, and the endpoint's submit route.
     * Once the worker drains, a job is refused here, before its scheduler sees it (see {@link DrainSwitch}).
     */
    public RouterFunction<ServerResponse> router(WorkerEndpoint<?> endpoint) {
        return RouterFunctions.route()
                .GET(InternalApi.STATUS, request -> ServerResponse.ok().bodyValue(endpoint.status(this)))
                .GET(InternalApi.JOURNAL, request -> ServerResponse.ok().bodyValue(context.journal().since(
                        Long.parseLong(request.queryParam("after").orElse("0")))))
                .POST(InternalApi.CANCEL, this::cancel)
                .POST(InternalApi.DRAIN, this::drain)
                .GET(InternalApi.DRAIN, this::drain)
                .GET(InternalApi.PREFIX_CACHE, request -> ServerResponse.ok()
                        .bodyValue(context.engine().prefixCacheStats()))
                .DELETE(InternalApi.PREFIX_CACHE, this::clearPrefixCache)
                .POST(endpoint.submitPath(), request -> drainSwitch.draining()
                        ? draining(request.headers().firstHeader(RequestIds.HEADER))
                        : endpoint.submit(request, this))
                .build();
    }

    /** Starts draining (idempotent); answers what the worker still holds, which the caller may poll to zero. */
    private Mono<ServerResponse> drain(ServerRequest request) {
        drainSwitch.begin("requested on " + InternalApi.DRAIN);
        return ServerResponse.ok().bodyValue(Map.of("draining", true,
                "liveRegistrations", context.registry().liveRegistrations()));
    }

    /**
     * Empties the engine's prefix cache: a short monitor, never a wait on the engine loop (a prefill in progress
     * keeps the pages it holds, and caches nothing more under the cleared chain). The engine tells its listener
     * {@code cleared()}, so the worker publishes that its cache is empty.
     */
    private Mono<ServerResponse> clearPrefixCache(ServerRequest request) {
        int cleared = context.engine().clearPrefixCache();
        log.info("prefix cache cleared on request: {} pages were cached", cleared);
        return ServerResponse.ok().bodyValue(Map.of("clearedPages", cleared));
    }

    /** 503 {@value Failed#DRAINING} with {@code Retry-After}: nothing was registered; the gateway goes elsewhere. */
    private Mono<ServerResponse> draining(String requestId) {
        log.info("requestId={} refused: draining", requestId);
        return ServerResponse.status(HttpStatus.SERVICE_UNAVAILABLE)
                .header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, retryAfter.toSeconds())))
                .bodyValue(new Failed(Failed.DRAINING, "this worker is draining"));
    }

    /** What a worker's status says about the parts every worker has. */
    public WorkerStatus status(String role, int queued, int running, long aborts, long chunksComputed) {
        return new WorkerStatus(role, queued, running, context.engine().pagePool().pagesLive(),
                context.agent().stats().liveRegions(), context.agent().stats().liveSessions(),
                context.registry().liveRegistrations(), aborts, chunksComputed, context.pairing());
    }

    private Mono<ServerResponse> cancel(ServerRequest request) {
        String id = request.pathVariable("requestId");
        if (!RequestIds.isValid(id)) {
            return badRequest("not a valid request ID");
        }
        CancelReason reason = CancelReason.fromWire(request.queryParam("reason").orElse(null));
        if (!cancel.propagation().inBand()) {
            log.info("requestId={} in-band cancel ({}) ignored: in-band propagation is off", id, reason);
            return ServerResponse.accepted().build();
        }
        CancelOutcome outcome = context.registry().cancel(id, reason, CancelSource.IN_BAND);
        log.info("requestId={} in-band cancel from the gateway ({}): {}", id, reason, outcome);
        return ServerResponse.ok().bodyValue(outcome.name());
    }

    /**
     * A job's events as the response; the gateway closing it before the end is the in-band signal. A close that
     * was not preceded by a reason ({@link #cancel}) cancels with {@link CancelReason#CONNECTION_CLOSED}; after the
     * reason, or after the job ended, it is a replay that changes nothing.
     */
    public <E> Mono<ServerResponse> stream(String requestId, Flux<E> events, Class<E> type) {
        AtomicBoolean ended = new AtomicBoolean();
        BooleanSupplier running = () -> !ended.get() && context.registry().isRegistered(requestId);
        Flux<E> watched = events.doOnCancel(() -> closed(requestId, running))
                .doOnTerminate(() -> ended.set(true));
        // A write that fails before the events end (the connection reset just as the first event went out: Reactor
        // Netty's AbortedException) does not always reach the events as a cancel; the job would then hold its pages
        // until the transfer's attach timeout, for nobody. Cancelling again is a replay that changes nothing.
        return ServerResponse.ok().contentType(NDJSON).body(ndjson(watched, type, failure -> {
            if (!ended.get()) {
                log.debug("requestId={} the stream's write failed before it ended: {}", requestId, failure.toString());
                closed(requestId, running);
            }
        }));
    }

    /**
     * Encodes {@code events} as NDJSON with the application's own encoder and writes them as one stream: one send
     * per response, which flushes whenever it has written all it holds, so each event reaches the gateway as soon as
     * it is encoded and a burst goes out in one flush. Spring's default for a streaming type sends each event as its
     * own flushed group, chained one after another, which adds a subscription and a write future per event.
     * {@code writeFailed} sees the write's own failure.
     */
    static <E> BodyInserter<Flux<E>, ReactiveHttpOutputMessage> ndjson(Flux<E> events, Class<E> type,
                                                                       Consumer<Throwable> writeFailed) {
        ResolvableType elementType = ResolvableType.forClass(type);
        return (message, context) -> {
            Encoder<E> encoder = encoderFor(context.messageWriters(), elementType);
            Flux<DataBuffer> body = encoder.encode(events, message.bufferFactory(), elementType, NDJSON, Map.of());
            return message.writeWith(body).doOnError(writeFailed);
        };
    }

    @SuppressWarnings("unchecked")
    private static <E> Encoder<E> encoderFor(List<HttpMessageWriter<?>> writers, ResolvableType elementType) {
        for (HttpMessageWriter<?> writer : writers) {
            if (writer instanceof EncoderHttpMessageWriter<?> encoding && writer.canWrite(elementType, NDJSON)) {
                return (Encoder<E>) encoding.getEncoder();
            }
        }
        throw new IllegalStateException("no NDJSON encoder for " + elementType + " among the configured codecs");
    }

    /**
     * The gateway closed the exchange of a registered request, streaming or still waiting to be admitted (decode's
     * admission queue): the in-band signal, as for {@link #stream}.
     */
    public void closed(String requestId) {
        closed(requestId, () -> true); // possibly not registered yet: the cancel's tombstone then ends it at once
    }

    /**
     * The gateway closed the exchange. Without in-band propagation the cancel waits out the closed-stream grace (see
     * the class comment), and is sent only if {@code running} still holds then and no cancel came meanwhile: a job
     * that ended (by the Kafka cancel or on its own) is not cancelled again, nor is a tombstone left for it.
     */
    private void closed(String requestId, BooleanSupplier running) {
        if (cancel.propagation().inBand()) {
            context.registry().cancel(requestId, CancelReason.CONNECTION_CLOSED, CancelSource.IN_BAND);
            return;
        }
        log.info("requestId={} stream closed by the gateway; in-band propagation is off: the job is aborted in {} "
                + "unless a cancel arrives on Kafka or it ends first", requestId, closedStreamGrace);
        timer.schedule(() -> {
            if (!running.getAsBoolean() || context.registry().isCancelled(requestId)) {
                return; // ended, or cancelled meanwhile (the Kafka cancel, or its tombstone for a job not yet here)
            }
            CancelOutcome outcome = context.registry().cancel(requestId, CancelReason.CONNECTION_CLOSED,
                    CancelSource.IN_BAND);
            log.info("requestId={} stream closed {} ago without a finish and no cancel came on Kafka: {}",
                    requestId, closedStreamGrace, outcome);
        }, closedStreamGrace.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** 400: nothing was registered or reserved. */
    public Mono<ServerResponse> badRequest(String message) {
        return ServerResponse.badRequest().bodyValue(new Failed(Failed.INVALID_REQUEST, message));
    }

    /** 503 with {@code Retry-After}: full or draining; the gateway may retry elsewhere. */
    public Mono<ServerResponse> busy(String requestId, String message) {
        return busy(requestId, message, null);
    }

    /**
     * 503 with {@code Retry-After} {@code after} (whole seconds, rounded up, at least 1), or the configured
     * default when {@code after} is null: the worker's own estimate of when it has room.
     */
    public Mono<ServerResponse> busy(String requestId, String message, Duration after) {
        Duration wait = after != null ? after : retryAfter;
        long seconds = Failed.retryAfterSeconds(wait);
        log.info("requestId={} refused: {}; Retry-After {} s", requestId, message, seconds);
        return ServerResponse.status(HttpStatus.SERVICE_UNAVAILABLE)
                .header(HttpHeaders.RETRY_AFTER, Long.toString(seconds))
                .bodyValue(new Failed(Failed.BUSY, message));
    }

    /**
     * 409 {@link Failed#PAIRING_MISMATCH}: the peer worker named in the request serves another model or runs another
     * numeric definition ({@code mismatch} names both values); nothing was registered or reserved.
     */
    public Mono<ServerResponse> pairingMismatch(String requestId, String role, String mismatch) {
        log.warn("requestId={} refused: the {} worker cannot pair with its peer: {}", requestId, role, mismatch);
        return ServerResponse.status(HttpStatus.CONFLICT).bodyValue(new Failed(Failed.PAIRING_MISMATCH,
                "the " + role + " worker cannot pair with the peer worker: " + mismatch));
    }

    /**
     * 409: the ID is live here already (e.g. a gateway retry of an attempt this worker still holds); never two
     * jobs for one ID.
     */
    public Mono<ServerResponse> duplicate(String requestId, DuplicateRegistrationException e) {
        log.info("requestId={} refused: already in flight on this worker", requestId);
        return ServerResponse.status(HttpStatus.CONFLICT).bodyValue(new Failed(Failed.DUPLICATE,
                "request " + requestId + " is already in flight on this worker"));
    }
}
