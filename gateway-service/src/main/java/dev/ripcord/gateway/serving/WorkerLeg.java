package dev.ripcord.gateway.serving;

import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.Affinity;
import dev.ripcord.gateway.routing.NoWorkerAvailableException;
import dev.ripcord.gateway.routing.WorkerInstance;
import dev.ripcord.gateway.routing.WorkerPool;
import io.github.resilience4j.retry.Retry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * One role's legs (decode or prefill): routing, the admission timeout, the breaker and bulkhead of the chosen
 * instance, and retries that stop at admission.
 *
 * <p>Design note. A leg is a sequence of attempts; each attempt is one HTTP exchange with one instance, with a
 * {@link LegState} that starts at CONNECTING. The attempt is timed only until the worker's first event (the
 * admission timeout, connecting included: {@code timeout(first, next -> never)}), so a healthy stream is never cut.
 * The first event moves it to ADMITTED, and from there on nothing is retried: the worker holds the request and a
 * second attempt could duplicate its work. A failure in CONNECTING becomes a {@link LegFailure}; whether it is
 * retried depends on its kind and on the role:
 *
 * <ul>
 *   <li><b>decode</b> retries every kind but {@code REJECTED} (4xx). Decode does no work until prefill pushes KV to
 *       the descriptor in its RESERVED event, and the gateway hands prefill only the descriptor of the attempt that
 *       was admitted, so an abandoned attempt can never compute anything. An attempt abandoned on the admission
 *       timeout is disposed, which closes its connection (the worker's in-band cancel). Every retry reuses the
 *       request's ID, and a retry never goes back to an instance that may hold an abandoned attempt (no answer in
 *       time, or a connection lost before the first event): there the in-band cancel leaves a tombstone under the
 *       ID that would abort the retry, or the registration is still live and the duplicate is refused (409).
 *       With no other instance left the leg fails with 503 and {@code Retry-After}. The gateway never publishes a
 *       Kafka cancel for an abandoned attempt either: that cancel is broadcast and would tombstone the ID
 *       everywhere.</li>
 *   <li><b>prefill</b> retries only {@code NO_WORKER}, {@code NOT_CONNECTED} and {@code DRAINING} (a 503 the
 *       worker's HTTP edge gives while it drains, before its scheduler sees the job), where the worker provably
 *       never acted on the request. The transfer descriptor it carries is single-use: decode's receive session accepts one
 *       sender, and a prefill worker connects its send session at admission and aborts it when it refuses (queue
 *       full), which ends the session for everybody. A prefill worker that answered anything, or did not answer in
 *       time, may have attached, so a retry elsewhere could only fail at decode or race the first attempt.</li>
 * </ul>
 *
 * <p>Breaker outcomes per attempt: admitted → success; no connection, 5xx other than 503, no answer in time, or a
 * connection lost before the first event → failure; 503/429 (busy: alive and saying so) and 4xx → ignored (the
 * permission is given back), and a 503 whose code is {@code draining} also takes the instance out of routing at once; the client going away before admission → ignored. A stream that breaks after
 * admission is recorded as a further failure. The bulkhead slot is held from routing until the attempt ends.
 *
 * <p>Cancellation: the caller links the whole leg (all attempts and the backoffs between them) to the request's
 * context, so cancelling the request or the client's subscription disposes whatever is in progress — an exchange,
 * or the backoff timer, after which no further attempt is made.
 */
final class WorkerLeg {

    private static final Logger log = LoggerFactory.getLogger(WorkerLeg.class);

    private static final Set<LegFailure.Kind> DECODE_RETRIES = EnumSet.complementOf(EnumSet.of(LegFailure.Kind.REJECTED));
    private static final Set<LegFailure.Kind> PREFILL_RETRIES = EnumSet.of(LegFailure.Kind.NO_WORKER,
            LegFailure.Kind.NOT_CONNECTED, LegFailure.Kind.DRAINING);

    private final String role;
    private final WorkerPool pool;
    private final Set<LegFailure.Kind> retriable;
    private final Retry retry;
    private final Duration admissionTimeout;
    private final Duration retryAfter;
    private final Scheduler timer;

    private WorkerLeg(WorkerPool pool, Set<LegFailure.Kind> retriable, WorkerResilience resilience, Scheduler timer) {
        this.role = pool.role();
        this.pool = pool;
        this.retriable = retriable;
        this.retry = resilience.retry(role, t -> t instanceof LegFailure f && f.retriable());
        this.admissionTimeout = resilience.properties().admissionTimeout();
        this.retryAfter = resilience.properties().retryAfter();
        this.timer = timer;
    }

    static WorkerLeg decode(WorkerPool pool, WorkerResilience resilience, Scheduler timer) {
        return new WorkerLeg(pool, DECODE_RETRIES, resilience, timer);
    }

    static WorkerLeg prefill(WorkerPool pool, WorkerResilience resilience, Scheduler timer) {
        return new WorkerLeg(pool, PREFILL_RETRIES, resilience, timer);
    }

    /**
     * The leg's events: those of the first attempt that the worker admitted. {@code exchange} performs one attempt
     * against the instance it is given (a fresh HTTP exchange per call) and must signal a non-2xx answer as a
     * {@link WorkerRefusedException}. Fails with a {@link dev.ripcord.gateway.generation.WorkerUnavailableException}
     * when no attempt was admitted and a retry later may help (503 with {@code Retry-After} at the edge), or a
     * {@link GenerationFailedException} for a worker fault or an admitted stream that broke (500).
     */
    <E> Flux<E> events(String requestId, Function<WorkerInstance, Flux<E>> exchange) {
        return events(requestId, Affinity.NONE, exchange);
    }

    /** {@link #events(String, Function)}, routing every attempt with the request's {@code affinity}. */
    <E> Flux<E> events(String requestId, Affinity affinity, Function<WorkerInstance, Flux<E>> exchange) {
        return Flux.defer(() -> {
            Retry.AsyncContext<Object> retryContext = retry.asyncContext();
            Set<WorkerInstance> tried = ConcurrentHashMap.newKeySet();
            Set<WorkerInstance> mayHoldIt = ConcurrentHashMap.newKeySet();
            AtomicInteger attempts = new AtomicInteger();
            return Flux.defer(() -> attempt(requestId, exchange, tried, mayHoldIt, attempts.incrementAndGet(),
                            retryContext, affinity))
                    .retryWhen(reactor.util.retry.Retry.from(signals -> signals.concatMap(signal ->
                            backoff(requestId, signal.failure(), attempts.get(), retryContext))))
                    .onErrorMap(LegFailure.class, f -> {
                        log.warn("requestId={} {} leg gave up after {} attempt(s): {}", requestId, role,
                                attempts.get(), f.getMessage());
                        return f.toGenerationFailure(retryAfter);
                    });
        });
    }

    /** The delay before the next attempt, or the failure itself when this one is final. */
    private Mono<Long> backoff(String requestId, Throwable failure, int attempt, Retry.AsyncContext<Object> retryContext) {
        if (!(failure instanceof LegFailure pre)) {
            return Mono.error(failure); // after admission (or a bug): never retried
        }
        long delayMillis = retryContext.onError(pre); // -1: not retried for this role, or no attempt left
        if (delayMillis < 0) {
            return Mono.error(pre);
        }
        log.info("requestId={} {} leg attempt {} failed before admission ({}); retrying in {} ms", requestId, role,
                attempt, pre.kind(), delayMillis);
        return Mono.delay(Duration.ofMillis(delayMillis), timer);
    }

    private <E> Flux<E> attempt(String requestId, Function<WorkerInstance, Flux<E>> exchange,
                                Set<WorkerInstance> tried, Set<WorkerInstance> mayHoldIt, int number,
                                Retry.AsyncContext<Object> retryContext, Affinity affinity) {
        WorkerPool.Lease lease;
        try {
            lease = pool.acquire(tried, mayHoldIt, affinity);
        } catch (NoWorkerAvailableException e) {
            log.info("requestId={} {}", requestId, e.getMessage());
            return Flux.error(new LegFailure(role, LegFailure.Kind.NO_WORKER, retriable.contains(LegFailure.Kind.NO_WORKER),
                    null, e));
        }
        tried.add(lease.instance());
        Attempt attempt = new Attempt(requestId, lease, retryContext, mayHoldIt);
        log.debug("requestId={} routed to {} (attempt {})", requestId, lease.instance().name(), number);
        return Flux.defer(() -> exchange.apply(lease.instance()))
                // Only the first event is timed: no timer runs on an admitted stream.
                .timeout(Mono.delay(admissionTimeout, timer), first -> Mono.never())
                .doOnNext(attempt::onEvent)
                .onErrorMap(attempt::onFailure)
                .doFinally(signal -> attempt.end());
    }

    /** One exchange with one instance: its {@link LegState} and its lease. */
    private final class Attempt {
        private final String requestId;
        private final WorkerPool.Lease lease;
        private final Retry.AsyncContext<Object> retryContext;
        private final Set<WorkerInstance> mayHoldIt;
        private final AtomicReference<LegState> state = new AtomicReference<>(LegState.CONNECTING);

        Attempt(String requestId, WorkerPool.Lease lease, Retry.AsyncContext<Object> retryContext,
                Set<WorkerInstance> mayHoldIt) {
            this.requestId = requestId;
            this.lease = lease;
            this.retryContext = retryContext;
            this.mayHoldIt = mayHoldIt;
        }

        void onEvent(Object event) {
            LegState current = state.get();
            if (current == LegState.CONNECTING) {
                if (move(LegState.CONNECTING, LegState.ADMITTED)) {
                    lease.admitted();
                    retryContext.onComplete();
                    log.debug("requestId={} {} admitted the leg", requestId, lease.instance().name());
                }
            } else if (current == LegState.ADMITTED) {
                move(LegState.ADMITTED, LegState.STREAMING);
            }
        }

        Throwable onFailure(Throwable failure) {
            LegState current = state.get();
            if (current.beforeAdmission()) {
                return classify(failure);
            }
            // The worker held the request: report, never retry. A broken stream counts against the instance.
            lease.failedAfterAdmission(failure);
            log.warn("requestId={} {} leg to {} broke after admission ({}): {}", requestId, role,
                    lease.instance().name(), current, failure.toString());
            return new GenerationFailedException("the " + role + " worker failed this request", failure);
        }

        void end() {
            LegState current;
            do {
                current = state.get();
                if (current == LegState.ENDED) {
                    break;
                }
            } while (!move(current, LegState.ENDED));
            lease.close();
        }

        private boolean move(LegState from, LegState to) {
            return state.compareAndSet(from, from.moveTo(to));
        }

        private LegFailure classify(Throwable failure) {
            LegFailure.Kind kind;
            java.time.Duration workerRetryAfter = null;
            if (failure instanceof WorkerRefusedException refused) {
                int status = refused.status();
                if (refused.draining()) {
                    kind = LegFailure.Kind.DRAINING;
                    lease.instance().markDraining(); // no new leg goes there; its legs in flight finish
                    lease.ignored();
                } else if (status == 503 || status == 429) {
                    kind = LegFailure.Kind.BUSY;
                    workerRetryAfter = refused.retryAfter();
                    lease.ignored();
                } else if (status >= 500) {
                    kind = LegFailure.Kind.WORKER_ERROR;
                    lease.failed(failure);
                } else {
                    kind = LegFailure.Kind.REJECTED;
                    lease.ignored();
                }
            } else if (failure instanceof TimeoutException) {
                kind = LegFailure.Kind.NO_ANSWER;
                lease.failed(failure);
                mayHoldIt.add(lease.instance()); // it may have admitted the request and not said so yet
            } else if (isConnectFailure(failure)) {
                kind = LegFailure.Kind.NOT_CONNECTED;
                lease.failed(failure);
            } else {
                kind = LegFailure.Kind.NO_ANSWER; // the connection broke before the worker's first event
                lease.failed(failure);
                mayHoldIt.add(lease.instance());
            }
            log.info("requestId={} {} failed before admission: {} ({}: {})", requestId, lease.instance().name(), kind,
                    failure.getClass().getName(), failure.getMessage());
            return new LegFailure(role, kind, retriable.contains(kind), workerRetryAfter, failure);
        }
    }

    private static boolean isConnectFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ConnectException || t instanceof io.netty.channel.ConnectTimeoutException
                    || t instanceof UnresolvedAddressException || t instanceof UnknownHostException) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }
}
