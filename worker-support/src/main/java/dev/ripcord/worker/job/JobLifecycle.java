package dev.ripcord.worker.job;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.IntSupplier;
import java.util.function.ToLongFunction;
import java.util.function.UnaryOperator;

import dev.ripcord.cancel.CancelOutcome;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.Registration;
import dev.ripcord.cancel.Sabotage;
import java.util.Optional;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.TransferAbortedException;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.worker.Drainable;
import dev.ripcord.worker.EngineLoop;
import org.jspecify.annotations.Nullable;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.RequestLogging;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a job of either worker begins and ends: the part of the request lifecycle both schedulers share, so that each
 * keeps only what its work needs.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #register} puts a job in the {@code CancellationRegistry} before the engine loop can see it. The
 *       registry is the only way into an abort: every cancel, whatever its source (in band, Kafka, a tombstone,
 *       shutdown, or the typed abort of a transfer by the other worker, {@link #cancelFromTransfer}), reaches the
 *       worker's {@link CancelHandler} through it, at most once per job.</li>
 *   <li>{@link #cancel}, {@link #fail} and {@link #finish} end a job, once: a CAS on its {@link JobState} decides
 *       which wins, and the winner alone journals the end, counts an abort (metric {@code ripcord.cancellations} with
 *       the phase and the cancel's source as {@code path}, the abort latency, {@link #aborts()}), emits the terminal
 *       event ({@link Cancelled}, {@link Failed} or the worker's own), ends the stream and completes the
 *       registration (which the registry then reports as cancelled or as completed normally, truthfully).</li>
 *   <li>Pages go back to the pool only when the job is terminal <em>and</em> its transfer is released
 *       ({@link #freeWhenReleased}): no write of the transfer can still read or land in them. Freed once, on the
 *       engine loop, journalled {@code FREED}.</li>
 *   <li>The lifecycle log (docs/lifecycles.md): every journal entry this class writes, and every one a scheduler
 *       writes through {@link #record}, is published as a {@code LifecycleEvent} under the journal's lock, so the
 *       log's per-instance order is the journal's order (CANCEL_RECEIVED, which mirrors no journal entry, with
 *       CANCEL_OBSERVED in one section, ABORTED, JOB_FINISHED, PAGES_FREED here;
 *       QUEUED, STARTED, CHUNK_DONE, JOB_ADMITTED, KV_LANDED from the schedulers). Publishing never blocks.</li>
 * </ul>
 *
 * @param <J> the worker's job type
 * @param <E> the worker's event type
 */
public final class JobLifecycle<J extends WorkerJob<E>, E> {

    /** A worker's reaction to a job's cancel; runs once per job, on whatever thread delivered it; never blocks. */
    @FunctionalInterface
    public interface CancelHandler<J> {
        void onCancel(J job, JobCancel.Request cancel);
    }

    private static final Logger log = LoggerFactory.getLogger(JobLifecycle.class);

    private final String service;
    private final WorkerContext context;
    private final EngineLoop loop;
    private final Function<Cancelled, E> cancelledEvent;
    private final Function<Failed, E> failedEvent;
    private final Timer cancelToStop;
    private final AtomicLong aborts = new AtomicLong();
    private volatile boolean drained;
    private volatile Function<J, String> observedAt = job -> "";
    private volatile Function<J, Integer> observedChunk = job -> null;
    private volatile ToLongFunction<J> observedStep;
    private final LifecyclePublisher lifecycleLog;
    private final Set<J> freeFailed = new LinkedHashSet<>(); // engine loop only

    /**
     * @param service        {@code prefill} or {@code decode}: the {@code service} tag of the metrics
     * @param step           the worker's unit of work on the engine loop
     * @param cancelledEvent the worker's event for a {@link Cancelled} end
     * @param failedEvent    the worker's event for a {@link Failed} end
     */
    public JobLifecycle(String service, WorkerContext context, BooleanSupplier step,
                        Function<Cancelled, E> cancelledEvent, Function<Failed, E> failedEvent) {
        this.service = Objects.requireNonNull(service, "service");
        this.context = context;
        this.loop = context.loopMode() == EngineLoop.Mode.MANUAL ? EngineLoop.manual(service + "-engine", step)
                : new EngineLoop(service + "-engine", step);
        this.cancelledEvent = cancelledEvent;
        this.failedEvent = failedEvent;
        this.lifecycleLog = context.lifecycle();
        this.cancelToStop = Timer.builder("ripcord.cancel.abort.latency").tag("service", service)
                .description("cancel observed by this worker -> its work stopped at a safe point")
                .publishPercentileHistogram().register(context.meters());
        Gauge.builder("ripcord.kv.pages.live", context.engine().pagePool(), p -> p.pagesLive())
                .description("KV pages allocated from the engine's pool").register(context.meters());
    }

    /**
     * What the journal's {@code CANCEL_OBSERVED} adds after "REASON via SOURCE": decode says at which step
     * ({@code " step=N"}), so that a test can prove the job left at the next one.
     */
    public void observedAt(Function<J, String> where) {
        this.observedAt = where;
    }

    /**
     * The step number the lifecycle log's {@code CANCEL_OBSERVED} carries (decode: the last step started when the
     * cancel was observed); evaluated right after {@link #observedAt}'s function, under the same monitor.
     */
    public void observedStep(ToLongFunction<J> step) {
        this.observedStep = step;
    }

    /**
     * The chunk the lifecycle log's {@code CANCEL_OBSERVED} carries (prefill: the chunk the engine was computing for
     * the job when the cancel was observed, the one chunk that may still finish; null when none was); evaluated
     * right after {@link #observedAt}'s function, under the same monitor.
     */
    public void observedChunk(Function<J, Integer> chunk) {
        this.observedChunk = chunk;
    }

    /**
     * Journals {@code event} for the job and publishes {@code draft} on the lifecycle log, in that order, under the
     * journal's lock. For a scheduler's own steps (queued, started, a chunk, KV landed); never blocks.
     */
    public void record(J job, String event, Object detail, LifecycleEvent draft) {
        context.journal().record(job.requestId(), event, detail, publishing(draft));
    }

    private Runnable publishing(LifecycleEvent draft) {
        return draft == null || !lifecycleLog.isEnabled() ? null : () -> lifecycleLog.emit(draft);
    }

    public EngineLoop loop() {
        return loop;
    }

    /** Aborts this worker carried out (one per cancelled job). */
    public long aborts() {
        return aborts.get();
    }

    // ------------------------------------------------------------------------------------------ beginning

    /**
     * Binds the job's stream to the loop and registers it. A tombstone (a cancel that arrived first) runs
     * {@code onCancel} before this returns; the job may then already be over, and its registration is completed.
     *
     * @throws dev.ripcord.cancel.DuplicateRegistrationException when the ID is live here already
     */
    public Registration register(J job, CancelHandler<J> onCancel) {
        job.events.emitOn(loop);
        Registration registration = context.registry().register(job.requestId(),
                (id, reason, source) -> observe(job, reason, source, onCancel));
        job.registration = registration;
        if (job.isEnded()) {
            registration.complete(); // ended inside register(), before the handle existed
        }
        return registration;
    }

    /**
     * The registry handed the job its cancel (once per job, whatever the source: in band, Kafka, a tombstone at
     * registration, the other worker, shutdown). Two events on the lifecycle log, in one section under the journal's
     * lock: {@code CANCEL_RECEIVED}, before this worker does anything with the cancel (so the log holds every cancel
     * a job got, whatever happens to it next), with the job's state then; and {@code CANCEL_OBSERVED} as the cancel
     * becomes the job's. Every end of a job but a refusal is published under that lock right after the CAS that
     * decided it, so no end of the job comes between the two in the log's order: a job that ends as its cancel
     * arrives ends either before the receipt (which then says so) or after the observation. The audit's
     * {@code CANCEL_RECEIVED_THEN_OBSERVED} holds the log to exactly that.
     */
    private void observe(J job, dev.ripcord.protocol.CancelReason reason, CancelSource source,
                         CancelHandler<J> onCancel) {
        JobCancel.Request cancel;
        boolean[] dropped = {false};
        // The cancel becomes visible to the engine loop the moment it is recorded, and the loop may stop the job at
        // once; holding the job's monitor until CANCEL_OBSERVED is journaled (cancel() journals its stop under the
        // same monitor) keeps the journal in causal order: observed, then stopped. Found by the cancel hammer.
        synchronized (job) {
            cancel = context.journal().inOrder(() -> {
                if (lifecycleLog.isEnabled()) {
                    lifecycleLog.emit(LifecycleEvent.of(LifecycleEventType.CANCEL_RECEIVED, job.requestId())
                            .withCancel(reason, source).withDetail(job.state().name()));
                }
                if (dropsCancel(job)) {
                    dropped[0] = true;
                    return null;
                }
                if (!job.requestCancel(reason, source)) {
                    return null;
                }
                String where = observedAt.apply(job);
                ToLongFunction<J> step = observedStep;
                Integer chunk = observedChunk.apply(job);
                LifecycleEvent observed = LifecycleEvent.of(LifecycleEventType.CANCEL_OBSERVED, job.requestId())
                        .withCancel(reason, source);
                if (chunk != null) {
                    observed = observed.withChunk(chunk);
                }
                context.journal().record(job.requestId(), "CANCEL_OBSERVED", reason + " via " + source + where,
                        publishing(step == null ? observed : observed.withStep(step.applyAsLong(job))));
                return job.cancelRequest();
            });
        }
        if (dropped[0]) {
            log.warn("requestId={} sabotaged: drop-cancel (a bench-only switch) drops this cancel ({} via {}); the "
                    + "job decodes on to its end", job.requestId(), reason, source);
        }
        if (cancel != null) {
            RequestLogging.with(job.requestId(), () -> onCancel.onCancel(job, cancel));
        }
    }

    /**
     * Bench-only ({@link Sabotage#DROP_CANCEL}, docs/operations.md): the decode worker's first cancel for a job not yet
     * ended goes nowhere. Here, where every source's cancel of a live job arrives, so that it is the cancel that is
     * lost whichever way it came, after its receipt is logged; the registry has delivered it, so no later cancel of
     * the job arrives either.
     */
    private boolean dropsCancel(J job) {
        return Sabotage.DROP_CANCEL.service.equals(service) && !job.isEnded() && !job.isCancelRequested()
                && Sabotage.DROP_CANCEL.fire();
    }

    /**
     * The other worker aborted the job's transfer. If its typed abort says it did so to carry out a cancel, that
     * cancel is delivered to this worker's registry with source {@link CancelSource#UPSTREAM}, and the registry
     * decides, as for any cancel, whether it aborts the job. Returns whether it was such a cancel. An abort this
     * side started, or one that is not a cancel (a lost peer, a protocol error), returns false and changes nothing.
     *
     * @param abort the session's abort reason, if it was aborted
     * @param peer  the other worker's side of the transfer
     */
    public boolean cancelFromPeer(J job, Optional<AbortReason> abort, Side peer) {
        AbortReason.Cancel cancel = abort.filter(a -> a.origin() == peer).flatMap(AbortReason::cancellation)
                .orElse(null);
        if (cancel == null) {
            return false;
        }
        CancelOutcome outcome = context.registry().cancel(job.requestId(), cancel.reason(), CancelSource.UPSTREAM);
        log.debug("requestId={} transfer aborted by the other worker for a cancel ({} via {} there): {}",
                job.requestId(), cancel.reason(), cancel.source(), outcome);
        return true;
    }

    /** {@link #cancelFromPeer} for a failed transfer future's exception. */
    public boolean cancelFromPeer(J job, Throwable failure, Side peer) {
        return cancelFromPeer(job, TransferAbortedException.reasonOf(failure), peer);
    }

    // ------------------------------------------------------------------------------------------ ending

    /**
     * Ends a job its cancel stopped: {@code from -> CANCELLED}, journal {@code event}, count the abort as
     * {@code phase}, emit {@link Cancelled} with the cancel's reason and source, end the stream, complete the
     * registration. False if the job was not in {@code from} (another ending won).
     */
    public boolean cancel(J job, JobState from, String phase, String event, Object detail) {
        return cancel(job, from, phase, event, detail, null);
    }

    /**
     * {@link #cancel(WorkerJob, JobState, String, String, Object)}, publishing {@code before} (decode's
     * {@code LEFT_BATCH}) on the lifecycle log just before the abort.
     */
    public boolean cancel(J job, JobState from, String phase, String event, Object detail, LifecycleEvent before) {
        return cancel(job, from, phase, event, detail, before, UnaryOperator.identity());
    }

    /**
     * {@link #cancel(WorkerJob, JobState, String, String, Object, LifecycleEvent)}, with {@code fields} adding what
     * the worker knows to the lifecycle log's {@code ABORTED} (prefill stopped inside a chunk: the chunk and the
     * layer boundary, as its journal entry says).
     */
    public boolean cancel(J job, JobState from, String phase, String event, Object detail, LifecycleEvent before,
                          UnaryOperator<LifecycleEvent> fields) {
        JobCancel.Request cancel = job.cancelRequest();
        Objects.requireNonNull(cancel, "cancel() without a cancel request");
        if (!job.moveTo(from, JobState.CANCELLED)) {
            return false;
        }
        LifecycleEvent aborted = fields.apply(LifecycleEvent.of(LifecycleEventType.ABORTED, job.requestId())
                .withCancel(cancel.reason(), cancel.source()).withDetail(phase));
        synchronized (job) { // after the canceller's CANCEL_OBSERVED (see observe)
            context.journal().record(job.requestId(), event, detail, publishing(aborted) == null ? null : () -> {
                if (before != null) {
                    lifecycleLog.emit(before);
                }
                lifecycleLog.emit(aborted);
            });
        }
        if (job.claimAbortCount()) {
            context.meters().counter("ripcord.cancellations", "service", service, "phase", phase,
                    "path", cancel.source().name().toLowerCase(Locale.ROOT)).increment();
            cancelToStop.record(System.nanoTime() - cancel.observedNanos(), TimeUnit.NANOSECONDS);
            aborts.incrementAndGet();
        }
        log.info("requestId={} {} cancelled {} ({} via {})", job.requestId(), service, phase, cancel.reason(),
                cancel.source());
        end(job, cancelledEvent.apply(new Cancelled(cancel.reason(), cancel.source())));
        return true;
    }

    /** Ends a job that broke: {@code from -> FAILED}, journal {@code FAILED}, emit {@link Failed}. */
    public boolean fail(J job, JobState from, String code, String message) {
        return fail(job, from, code, message, null);
    }

    /**
     * {@link #fail(Job, JobState, String, String)} for a job the worker could not serve in time ({@link Failed#BUSY}):
     * the event carries when a retry may succeed, which the gateway answers as 503 with {@code Retry-After}.
     */
    public boolean fail(J job, JobState from, String code, String message, @Nullable Duration retryAfter) {
        if (from.isTerminal() || !job.moveTo(from, JobState.FAILED)) {
            return false;
        }
        context.journal().record(job.requestId(), "FAILED", message, publishing(
                LifecycleEvent.of(LifecycleEventType.JOB_FINISHED, job.requestId())
                        .withOutcome(LifecycleOutcome.FAILED).withDetail(code)));
        log.warn("requestId={} {} failed: {}", job.requestId(), service, message);
        end(job, failedEvent.apply(new Failed(code, message,
                retryAfter == null ? null : Failed.retryAfterSeconds(retryAfter))));
        return true;
    }

    /**
     * Ends a job the worker refused after registering it (queue full, no capacity, transfer unreachable): FAILED,
     * the stream ends without an event (the refusal is the HTTP answer), the registration completes. Not journalled:
     * the job never started.
     */
    public boolean refuse(J job) {
        if (!job.moveTo(JobState.WAITING, JobState.FAILED)) {
            return false;
        }
        lifecycleLog.emit(LifecycleEvent.of(LifecycleEventType.JOB_FINISHED, job.requestId())
                .withOutcome(LifecycleOutcome.FAILED).withDetail("refused"));
        end(job, null);
        return true;
    }

    /** Ends a job whose work is done: {@code from -> DONE}, journal {@code event}, emit {@code last} (if any). */
    public boolean finish(J job, JobState from, E last, String event, Object detail) {
        return finish(job, from, last, event, detail, UnaryOperator.identity());
    }

    /**
     * {@link #finish(WorkerJob, JobState, Object, String, Object)}, with {@code fields} adding what the worker knows
     * to the lifecycle log's {@code JOB_FINISHED} (decode: tokens and step).
     */
    public boolean finish(J job, JobState from, E last, String event, Object detail,
                          UnaryOperator<LifecycleEvent> fields) {
        if (!job.moveTo(from, JobState.DONE)) {
            return false;
        }
        context.journal().record(job.requestId(), event, detail, publishing(fields.apply(
                LifecycleEvent.of(LifecycleEventType.JOB_FINISHED, job.requestId())
                        .withOutcome(LifecycleOutcome.COMPLETED))));
        end(job, last);
        return true;
    }

    private void end(J job, E last) {
        if (!job.claimEnd()) {
            return;
        }
        if (last != null) {
            job.events.emit(last);
        }
        job.events.end();
        Registration registration = job.registration;
        if (registration != null) {
            registration.complete();
        }
        onLoop(() -> tryFree(job));
    }

    // ------------------------------------------------------------------------------------------ pages

    /**
     * The job's pages may go back once it is terminal and {@code transferReleased} has completed (its transfer
     * session is RELEASED, or there was none); {@code freePages} then runs once, on the engine loop, and returns the
     * pages the engine's pool took back ({@code PAGES_FREED pages=N} on the lifecycle log).
     */
    public void freeWhenReleased(J job, CompletableFuture<?> transferReleased, Runnable freePages) {
        freeWhenReleased(job, transferReleased, () -> {
            freePages.run();
            return UNKNOWN_PAGES;
        });
    }

    /** A free that does not say how many pages the pool took back: {@code PAGES_FREED} without {@code pages}. */
    private static final int UNKNOWN_PAGES = -1;

    /**
     * {@link #freeWhenReleased(WorkerJob, CompletableFuture, Runnable)}, with {@code freePages} returning the pages
     * the engine's pool took back ({@code InferenceEngine.free}), which {@code PAGES_FREED} carries for the audit.
     */
    public void freeWhenReleased(J job, CompletableFuture<?> transferReleased, IntSupplier freePages) {
        job.transferReleased = transferReleased;
        job.freePages = freePages;
        transferReleased.whenComplete((v, e) -> onLoop(() -> tryFree(job)));
    }

    private void tryFree(J job) {
        CompletableFuture<?> released = job.transferReleased;
        IntSupplier free = job.freePages;
        if (free == null || !job.state().isTerminal() || !released.isDone() || !job.claimFree()) {
            return;
        }
        int pages;
        try {
            pages = free.getAsInt();
        } catch (RuntimeException e) {
            // Not freed: the claim goes back, and the free is tried again when another job's pages go back or the
            // worker drains (the pool may refuse for a moment; it must never be forgotten).
            job.unclaimFree();
            freeFailed.add(job);
            log.error("requestId={} freeing its pages failed; retried at the next free", job.requestId(), e);
            return;
        }
        freeFailed.remove(job);
        LifecycleEvent freed = LifecycleEvent.of(LifecycleEventType.PAGES_FREED, job.requestId());
        context.journal().record(job.requestId(), "FREED", "",
                publishing(pages == UNKNOWN_PAGES ? freed : freed.withPages(pages)));
        retryFailedFrees();
    }

    /** Tries again every free that threw (engine loop). */
    private void retryFailedFrees() {
        if (freeFailed.isEmpty()) {
            return;
        }
        for (J job : List.copyOf(freeFailed)) {
            if (freeFailed.remove(job)) {
                tryFree(job);
            }
        }
    }

    /** Jobs whose free threw and waits to be tried again (engine loop). */
    public int freesPending() {
        return freeFailed.size();
    }

    private void onLoop(Runnable task) {
        if (loop.inLoop()) {
            task.run();
        } else {
            try {
                loop.execute(task);
            } catch (IllegalStateException closed) {
                log.debug("engine loop closed; not running {}", task);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ shutdown

    /**
     * Graceful shutdown, the same in both workers: stop admitting, let work in flight finish for up to
     * {@code grace}, then cancel the rest ({@code SHUTDOWN}, through the registry like any cancel) and wait,
     * bounded, for every page to come back. Once.
     */
    public void drain(Duration grace, Runnable stopAccepting, BooleanSupplier idle) {
        if (drained) {
            return;
        }
        onLoop(this::retryFailedFrees);
        Drainable.drainInOrder(stopAccepting, idle, grace, context.registry(),
                context.engine().pagePool()::pagesLive, log);
        drained = true;
    }

    /** Drains without a grace period if nobody drained first, then stops the engine loop. */
    public void close(Runnable stopAccepting, BooleanSupplier idle) {
        drain(Duration.ZERO, stopAccepting, idle);
        loop.close(Duration.ofSeconds(10));
    }
}
