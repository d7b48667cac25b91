package dev.ripcord.decode.scheduler;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.time.Duration;

import dev.ripcord.cancel.Sabotage;
import dev.ripcord.protocol.Pairing;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.engine.ComputeStoppedException;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvPoolExhaustedException;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.Side;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.TransferMetadata;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.RequestLogging;
import dev.ripcord.worker.WireSampling;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.JobLifecycle;
import dev.ripcord.worker.job.JobState;
import dev.ripcord.worker.job.LatencyBuckets;
import dev.ripcord.worker.job.WorkerScheduler;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.springframework.stereotype.Component;
import org.slf4j.LoggerFactory;

/**
 * The decode worker's request lifecycle: what continuous batching adds to the shared {@link JobLifecycle}.
 *
 * <pre>
 *  admit (engine loop) ─► register (a tombstone cancels it here, before any work)
 *                      ─► pages for prompt + max_tokens not all uncommitted, max-batch jobs already admitted,
 *                         or a waiting job that may no longer be passed:
 *                         wait in the admission queue (oldest first; one that fits may pass one that does not
 *                         until the latter has aged; bounded: full ⇒ refused, 503; max-wait ⇒ 503, both with
 *                         an estimated Retry-After)                                                         WAITING
 *                      ─► commit pages for prompt + max_tokens, reserve the prompt's pages, open a receive session
 *                         into them, answer RESERVED(descriptor)                                           WAITING
 *  KV lands, prefill's done notification carries the first token
 *                      ─► adopt the pages, emit token 0, join the batch (continuous batching)         ─► RUNNING
 *  each step:          ── CANCEL CHECK POINT ── cancelled sequences leave the batch
 *                      one batched decode step; every sequence emits a token; finished ones leave      ─► DONE
 *                      ── SAFE POINTS ── a cancel observed during the step requests the engine's stop on its
 *                         sequence; once every sequence of the step has one, the step stops at its next safe
 *                         point and they all leave (STOPPED layer=M/L step=N); if only some have, the step leaves
 *                         each of them out from its next attention item, head item or sampling on, goes on for
 *                         the others, and they leave after it without a token from it (STOPPED layer=M/L step=N)
 *  a cancel while in the admission queue removes the job from it (REMOVED_FROM_QUEUE); nothing was reserved
 *  a cancel while WAITING aborts the receive session (with the cancel, typed, so prefill learns why); prefill
 *  aborting the transfer for a cancel is that cancel here (source UPSTREAM, through the registry)
 *  pages are freed only once the job is terminal and its session RELEASED (no write can land in them any more)
 * </pre>
 *
 * <p>Every engine call happens on the {@link EngineLoop} thread; cancels arrive on any thread and only record
 * the request (and, while waiting for KV, end the job and abort the transfer, which is safe from any thread).
 *
 * <p>Steps are numbered from 1 as they start ({@link #stepsStarted()}; a step starts at its cancel check point,
 * and only when the batch has someone in it). The journal's {@code CANCEL_OBSERVED} says {@code step=N}, the last
 * step started when the cancel was observed, and {@code STOPPED} says {@code step=M}, the step the sequence did not
 * take part in: the contract is {@code M = N + 1}, exactly (a lock orders observations against step starts). The
 * one exception is a step stopped at a layer boundary because every sequence in it was cancelled: its sequences
 * leave inside step {@code N} itself, and {@code STOPPED} says {@code layer=B/L step=N} (layers {@code [0, B)} of the
 * step ran; none of its tokens was emitted).
 */
@Component
public final class DecodeScheduler extends WorkerScheduler<DecodeJob, DecodeEvent> {

    private static final Logger log = LoggerFactory.getLogger(DecodeScheduler.class);

    /** End-of-generation ids, sorted: EOS and, for chat models, end-of-turn tokens (Tokenizer.stopTokens()). */
    private final int[] stopTokens;
    private final int maxBatch;

    private final ArrayDeque<DecodeJob> ready = new ArrayDeque<>();
    private final List<DecodeJob> batch = new ArrayList<>();
    private final List<Sequence> batchSequences = new ArrayList<>();
    private int committedPages;
    /**
     * Jobs holding committed pages (admitted, not yet freed): at most {@link #maxBatch}, so that every admitted job
     * joins the batch as soon as its KV lands instead of waiting, first token sent, for a slot (engine loop only).
     */
    private int admittedJobs;
    /**
     * Requests waiting for their pages, oldest first (engine-loop state). A request that fits may pass one that does
     * not, but only until the passed one has seen as many pages committed past it as it needs itself
     * ({@link DecodeJob#pagesPassed}); from then on nobody passes it, so a stream of small requests cannot starve a
     * large one, and one large request does not hold back smaller ones that fit beside it.
     */
    private final ArrayDeque<DecodeJob> admissionQueue = new ArrayDeque<>();
    private volatile int queuedForPages;
    private final int maxQueued;
    private final Duration maxWait;
    private volatile int awaitingKv;
    private volatile int running;
    /**
     * Orders cancel observations against the start of steps, so that the journal's step numbers are exact: a
     * cancel observed when step N was the last one started leaves the batch before step N + 1, never later.
     */
    private final Object stepLock = new Object();
    private volatile long stepsStarted;
    private final Timer decodeTime;
    private final Duration retryAfter;
    /** Tokens the admitted jobs may still generate: their max_tokens, less what they generated (engine loop). */
    private long tokensPromised;
    /** Nanoseconds a decode step takes, an exponential average over the steps; 0 before the first (engine loop). */
    private double stepNanos;
    /** Sent with every {@code RESERVED}: what the prefill worker that pushes the KV must share. */
    private final Pairing pairing;

    /** Continuous batching on {@code context}'s engine; a bean, closed before the context it works with. */
    public DecodeScheduler(WorkerContext context, DecodeProperties properties) {
        super("decode", context, c -> c, f -> f);
        this.maxBatch = Math.min(properties.maxBatch(), engine.options().maxBatch());
        this.maxQueued = properties.admission().maxQueued();
        this.maxWait = properties.admission().maxWait();
        this.retryAfter = properties.retryAfter();
        this.stopTokens = engine.tokenizer().stopTokens();
        this.pairing = context.pairing();
        lifecycle.observedAt(job -> {
            long step;
            synchronized (stepLock) {
                step = stepsStarted;
                job.observedStep = step;
            }
            return " step=" + step;
        });
        lifecycle.observedStep(job -> job.observedStep);
        Gauge.builder("ripcord.decode.awaiting.kv", this, s -> s.awaitingKv)
                .description("requests whose KV is still being transferred").register(context.meters());
        Gauge.builder("ripcord.decode.running", this, s -> s.running)
                .description("sequences in the decode batch").register(context.meters());
        this.decodeTime = Timer.builder("ripcord.request.decode.time")
                .description("first token emitted -> last token emitted, for generations that finished")
                .serviceLevelObjectives(LatencyBuckets.requestLatency()).register(context.meters());
        startLoop();
    }

    // ------------------------------------------------------------------------------------------ admission

    /**
     * Admits a request on the engine loop. The future completes with the job once its pages are reserved (its event
     * stream starts with RESERVED), or once a cancel ended it (a tombstone, or a cancel while it waited: its stream
     * is just CANCELLED). It fails with {@link NoCapacityException}, nothing kept, when the admission queue is full,
     * or when the request waited {@code ripcord.decode.admission.max-wait} for pages and a batch slot. Nothing blocks
     * while it waits: the future completes from the engine loop when pages and a slot come back.
     */
    public CompletableFuture<DecodeJob> submit(DecodeRequest request) {
        return register(request).thenCompose(admitted -> admitted);
    }

    /**
     * {@link #submit} in two stages: the outer future completes once the request is registered (a cancel under its
     * ID now reaches it: a caller that goes away from here on cancels it), the inner one as {@link #submit}'s.
     */
    public CompletableFuture<CompletableFuture<DecodeJob>> register(DecodeRequest request) {
        if (!accepting()) {
            return CompletableFuture.failedFuture(new NoCapacityException("decode worker is shutting down"));
        }
        return loop.call(() -> RequestLogging.withResult(request.requestId(), () -> admit(request)));
    }

    private CompletableFuture<DecodeJob> admit(DecodeRequest request) {
        DecodeJob job = new DecodeJob(request);
        // Set until admission has decided: a cancel from another thread meanwhile takes the queued path (nothing
        // reserved yet), and admission then leaves the job alone.
        job.queuedForPages.set(true);
        lifecycle.register(job, this::onCancel);
        if (job.state().isTerminal()) {
            job.queuedForPages.set(false);
            return CompletableFuture.completedFuture(job); // a tombstone cancelled it: no pages, no session
        }
        int contextLength = engine.config().contextLength();
        int need = pool.layout().pagesFor(Math.min(request.promptTokens() + request.maxTokens(), contextLength));
        // The pool holds at least one full context (EngineOptions), so every valid request fits once pages are back.
        boolean fits = canAdmit(need) && mayPassQueue();
        if (fits || admissionQueue.size() >= maxQueued) {
            if (!job.queuedForPages.compareAndSet(true, false)) {
                return job.admitted; // a cancel ended it as it registered
            }
            if (!fits) {
                lifecycle.refuse(job);
                throw new NoCapacityException("decode admission queue is full (" + maxQueued
                        + " waiting for KV pages)", estimatedRetryAfter());
            }
            passQueue(need);
            reserve(job, need);
            return CompletableFuture.completedFuture(job);
        }
        job.pagesNeeded = need;
        admissionQueue.addLast(job); // a cancel that already took it out removes it next, on this loop
        queuedForPages = admissionQueue.size();
        int ahead = admissionQueue.size() - 1;
        lifecycle.record(job, "QUEUED", ahead + " ahead, " + need + " pages",
                LifecycleEvent.of(LifecycleEventType.QUEUED, job.requestId()).withDetail(Integer.toString(ahead)));
        log.info("requestId={} waits for {} KV pages and a batch slot ({} pages uncommitted of {}, {} of {} slots"
                + " taken, {} ahead)", job.requestId(), need, pool.pageCount() - committedPages, pool.pageCount(),
                admittedJobs, maxBatch, ahead);
        CompletableFuture.delayedExecutor(maxWait.toNanos(), TimeUnit.NANOSECONDS, loop::execute)
                .execute(() -> RequestLogging.with(job.requestId(), () -> waitedTooLong(job)));
        return job.admitted;
    }

    /**
     * Admits waiting requests, oldest first, that fit; one that does not is passed over while it may be (it has seen
     * fewer pages committed past it than it needs), else admission stops at it (engine loop).
     */
    private void admitWaiting() {
        java.util.Iterator<DecodeJob> it = admissionQueue.iterator();
        List<DecodeJob> passed = new ArrayList<>();
        while (it.hasNext() && admittedJobs < maxBatch) {
            DecodeJob job = it.next();
            if (!job.queuedForPages.get()) {
                it.remove(); // a cancel or its max-wait took it out (and completed it)
                continue;
            }
            if (!canAdmit(job.pagesNeeded)) {
                if (job.pagesPassed >= job.pagesNeeded) {
                    break; // aged: nobody passes it any more
                }
                passed.add(job);
                continue;
            }
            it.remove();
            if (!job.queuedForPages.compareAndSet(true, false)) {
                continue; // a cancel took it out (and completed it)
            }
            for (DecodeJob older : passed) {
                older.pagesPassed += job.pagesNeeded;
            }
            RequestLogging.with(job.requestId(), () -> {
                try {
                    reserve(job, job.pagesNeeded);
                    job.admitted.complete(job);
                } catch (RuntimeException e) {
                    job.admitted.completeExceptionally(e);
                }
            });
        }
        queuedForPages = admissionQueue.size();
    }

    /** Whether a new request that fits may be admitted past every waiting one: none of them has aged. */
    private boolean mayPassQueue() {
        for (DecodeJob waiting : admissionQueue) {
            if (waiting.pagesPassed >= waiting.pagesNeeded) {
                return false;
            }
        }
        return true;
    }

    /** A request committing {@code pages} is admitted past every waiting one: they age by as much. */
    private void passQueue(int pages) {
        for (DecodeJob waiting : admissionQueue) {
            waiting.pagesPassed += pages;
        }
    }

    /**
     * What {@code Retry-After} says when decode refuses: the time the tokens in hand (what the admitted jobs may
     * still generate and the waiting ones may ask for) take at the measured step time, shared among the batch's
     * slots; the configured {@code retry-after} before the first step (engine loop).
     */
    private Duration estimatedRetryAfter() {
        long tokens = tokensPromised;
        for (DecodeJob waiting : admissionQueue) {
            tokens += waiting.request.maxTokens();
        }
        return estimateRetryAfter(stepNanos, tokens, maxBatch, retryAfter);
    }

    /**
     * {@code tokens} decode tokens, {@code slots} at a time, at {@code stepNanos} a step: whole seconds, at least
     * one; {@code fallback} when no step was measured yet.
     */
    static Duration estimateRetryAfter(double stepNanos, long tokens, int slots, Duration fallback) {
        if (stepNanos <= 0) {
            return fallback;
        }
        double steps = Math.ceil((double) tokens / Math.max(1, slots));
        return Duration.ofSeconds(Math.max(1, (long) Math.ceil(steps * stepNanos / 1e9)));
    }

    /** Whether a job that needs {@code pages} committed pages can be admitted now: they fit, and a slot is free. */
    private boolean canAdmit(int pages) {
        return committedPages + pages <= pool.pageCount() && admittedJobs < maxBatch;
    }

    /** The request's {@code max-wait} is over: if it still waits, it is refused (engine loop). */
    private void waitedTooLong(DecodeJob job) {
        if (!job.queuedForPages.compareAndSet(true, false)) {
            return; // admitted or cancelled meanwhile
        }
        admissionQueue.remove(job);
        queuedForPages = admissionQueue.size();
        lifecycle.record(job, "REFUSED", "waited " + maxWait.toMillis() + " ms for " + job.pagesNeeded + " pages",
                null);
        lifecycle.refuse(job);
        job.admitted.completeExceptionally(new NoCapacityException("waited " + maxWait.toMillis()
                + " ms for " + job.pagesNeeded + " KV pages and a batch slot (" + (pool.pageCount() - committedPages)
                + " pages uncommitted of " + pool.pageCount() + ", " + admittedJobs + " of " + maxBatch
                + " slots taken)", estimatedRetryAfter()));
        admitWaiting(); // the head may have changed
    }

    /** Commits {@code need} pages to the job, reserves its prompt's, opens its receive session (engine loop). */
    private void reserve(DecodeJob job, int need) {
        DecodeRequest request = job.request;
        Sequence seq;
        try {
            seq = engine.reserve(request.promptTokens(), sampling(request));
        } catch (KvPoolExhaustedException e) {
            lifecycle.refuse(job);
            throw new NoCapacityException(e.getMessage());
        }
        job.sequence = seq;
        job.committedPages = need;
        committedPages += need;
        admittedJobs++;
        tokensPromised += request.maxTokens();
        List<ByteRange> targets = new ArrayList<>(seq.pageCount());
        for (int i = 0; i < seq.pageCount(); i++) {
            targets.add(new ByteRange(pool.offsetOf(seq.poolPage(i)), pool.pageBytes()));
        }
        ReceiveSession session;
        try {
            session = context.agent().openReceive(job.requestId(), context.poolRegion(), targets);
        } catch (RuntimeException e) {
            // Nothing else knows of the pages yet: undo the reservation here, or they are never given back.
            engine.free(seq);
            job.sequence = null;
            committedPages -= need;
            admittedJobs--;
            tokensPromised -= request.maxTokens();
            lifecycle.refuse(job);
            loop.execute(this::admitWaiting);
            throw e;
        }
        job.session = session;
        awaitingKv++;
        // The session's outcome is handled (KV_LANDED or KV_FAILED journalled) before its pages can go back: a
        // session completes before it is released, but the release may be seen first on the engine loop (an abort
        // that runs there frees at once, while the outcome waits in the loop's queue).
        CompletableFuture<Void> outcomeHandled = new CompletableFuture<>();
        session.completion().whenComplete((metadata, error) -> loop.execute(
                () -> RequestLogging.with(job.requestId(), () -> {
                    try {
                        onKv(job, metadata, error);
                    } finally {
                        outcomeHandled.complete(null);
                    }
                })));
        // Pages go back only once no write can land in them: after the session is RELEASED.
        int reservedPages = seq.pageCount();
        lifecycle.freeWhenReleased(job, CompletableFuture.allOf(session.released(), outcomeHandled), () -> {
            int freed = engine.free(seq);
            if (freed == reservedPages && freed > 0 && Sabotage.KEEP_PAGE.fire()) { // bench-only: docs/operations.md
                engine.pagePool().allocate();
                freed--;
            }
            job.sequence = null;
            committedPages -= job.committedPages;
            admittedJobs--;
            tokensPromised -= Math.max(0, request.maxTokens() - job.generated);
            // After this job's FREED is journalled (the lifecycle records it when this returns): the next one's
            // RESERVED then follows the release that made room for it.
            loop.execute(this::admitWaiting);
            return freed;
        });
        lifecycle.record(job, "RESERVED", seq.pageCount() + " pages",
                LifecycleEvent.of(LifecycleEventType.JOB_ADMITTED, job.requestId()).withPages(seq.pageCount()));
        job.emit(new DecodeEvent.Reserved(session.descriptor().encode(), pairing));
        log.debug("requestId={} reserved {} pages ({} committed) for {} prompt tokens; awaiting KV",
                job.requestId(), seq.pageCount(), need, request.promptTokens());
        JobCancel.Request cancel = job.cancelRequest();
        if (cancel != null) {
            // Cancelled between registration and now (from another thread): abort what we just opened.
            session.abort(cancel.reason(), cancel.source());
        }
    }

    private static SamplingParams sampling(DecodeRequest request) {
        return WireSampling.toEngine(request.sampling());
    }

    /** The registry's abort handler: quick and non-blocking, on whatever thread delivered the cancel. */
    private void onCancel(DecodeJob job, JobCancel.Request cancel) {
        boolean atAdmission = cancel.source() == dev.ripcord.protocol.CancelSource.TOMBSTONE;
        if (atAdmission && lifecycle.cancel(job, JobState.WAITING, "transfer", "CANCELLED_AT_ADMISSION",
                cancel.reason())) {
            return;
        }
        if (job.queuedForPages.compareAndSet(true, false)) {
            // Waiting for pages: nothing is reserved or open. It leaves the queue on the loop, which then admits
            // whoever is at the head now.
            lifecycle.cancel(job, JobState.WAITING, "queued", "REMOVED_FROM_QUEUE", cancel.reason());
            job.admitted.complete(job);
            loop.execute(() -> {
                admissionQueue.remove(job);
                queuedForPages = admissionQueue.size();
                admitWaiting();
            });
            return;
        }
        if (lifecycle.cancel(job, JobState.WAITING, "transfer", "TRANSFER_ABORTED", cancel.reason())) {
            ReceiveSession session = job.session;
            if (session != null) {
                // Abort stops acceptance, fences late writes, then releases; pages are freed after that.
                session.abort(cancel.reason(), cancel.source());
            }
        } else {
            // A step in progress leaves the sequence out from its next attention or head item on (and stops as a
            // whole at its next safe point if every sequence in it is cancelled).
            Sequence sequence = job.sequence;
            if (sequence != null) {
                sequence.requestStop();
            }
            log.info("requestId={} cancel observed; leaves the batch at its next safe point", job.requestId());
            loop.wakeUp();
        }
    }

    // ------------------------------------------------------------------------------------------ engine loop

    private void onKv(DecodeJob job, byte[] metadata, Throwable error) {
        awaitingKv--;
        lifecycle.record(job, error == null ? "KV_LANDED" : "KV_FAILED", error == null ? "" : error.getMessage(),
                error == null ? LifecycleEvent.of(LifecycleEventType.KV_LANDED, job.requestId()) : null);
        if (error != null) {
            // Prefill aborting the transfer for a cancel (it saw it first, e.g. from Kafka) is that cancel here,
            // delivered through the registry like any other; a cancel of decode's own already ended the job.
            if (!lifecycle.cancelFromPeer(job, error, Side.SENDER) && !job.isCancelRequested()) {
                lifecycle.fail(job, JobState.WAITING, Failed.TRANSFER_FAILED,
                        "KV transfer failed: " + error.getMessage());
            }
            return; // pages are freed when the session is released
        }
        if (!job.moveTo(JobState.WAITING, JobState.RUNNING)) {
            return; // cancelled as the KV landed; freed on release
        }
        recordQueueTime(job);
        job.firstTokenNanos = System.nanoTime();
        TransferMetadata.FirstToken firstToken = TransferMetadata.decode(metadata);
        int first = firstToken.token();
        try {
            engine.adopt(job.sequence, job.request.promptTokens(), job.request.promptIds(), first,
                    WireSampling.toEngine(first, firstToken.logprobs()));
            engine.ensureCapacity(job.sequence,
                    Math.min(job.request.promptTokens() + job.request.maxTokens(), engine.config().contextLength()));
        } catch (RuntimeException e) {
            // Never left RUNNING with nobody to step it: the gateway would wait on this leg until its deadline.
            log.error("requestId={} cannot join the batch", job.requestId(), e);
            lifecycle.fail(job, JobState.RUNNING, Failed.ENGINE_FAILED, "cannot join the batch: " + e.getMessage());
            return;
        }
        log.debug("requestId={} KV landed; joins the batch with first token {}", job.requestId(), first);
        if (emitToken(job, first, -1)) {
            return;
        }
        ready.addLast(job);
    }

    /**
     * Emits the job's next token; returns true if that finished the job. {@code step}: the decode step that produced
     * it, or -1 for the first token (prefill's, emitted as the KV lands): the lifecycle log's JOB_FINISHED says which.
     */
    private boolean emitToken(DecodeJob job, int token, long step) {
        int index = job.generated++;
        if (job.generated <= job.request.maxTokens()) {
            tokensPromised--;
        }
        String finish = null;
        if (Arrays.binarySearch(stopTokens, token) >= 0 && !job.request.ignoreEos() || job.stopsOn(token)) {
            finish = "stop";
        } else if (job.generated >= job.request.maxTokens()) {
            finish = "length";
        }
        DecodeEvent.Token event = new DecodeEvent.Token(index, token, finish,
                WireSampling.toWire(job.sequence.lastLogprobs()));
        if (finish == null) {
            job.emit(event);
            return false;
        }
        if (job.state() == JobState.RUNNING) {
            // Before the last event goes out, so that whoever sees the generation end sees it counted. Only this loop
            // ends a running job, so the finish below wins.
            decodeTime.record(System.nanoTime() - job.firstTokenNanos, TimeUnit.NANOSECONDS);
        }
        String why = finish;
        int generated = job.generated;
        if (lifecycle.finish(job, JobState.RUNNING, event, "FINISHED", generated + " tokens, " + finish,
                done -> (step < 0 ? done : done.withStep(step)).withTokens(generated).withDetail(why))) {
            log.info("requestId={} finished: {} tokens ({})", job.requestId(), job.generated, finish);
        }
        return true;
    }

    @Override
    protected boolean step() {
        // Continuous batching: waiting sequences join between steps.
        while (batch.size() < maxBatch && !ready.isEmpty()) {
            batch.add(ready.pollFirst());
        }
        if (batch.isEmpty()) {
            running = 0;
            return false;
        }
        // ── CANCEL CHECK POINT: cancelled sequences leave the batch before the next step. ──
        long step;
        List<DecodeJob> leaving = new ArrayList<>();
        synchronized (stepLock) {
            step = ++stepsStarted;
            batch.removeIf(job -> job.observedStep < step && leaving.add(job));
            ready.removeIf(job -> job.observedStep < step && leaving.add(job));
        }
        for (DecodeJob job : leaving) {
            RequestLogging.with(job.requestId(), () -> {
                if (lifecycle.cancel(job, JobState.RUNNING, "decode", "STOPPED",
                        job.generated + " tokens step=" + step, LifecycleEvent.of(LifecycleEventType.LEFT_BATCH,
                                job.requestId()).withStep(step).withTokens(job.generated))) {
                    log.info("requestId={} left the batch after {} tokens", job.requestId(), job.generated);
                }
            });
        }
        running = batch.size();
        if (batch.isEmpty()) {
            return true;
        }
        batchSequences.clear();
        for (DecodeJob job : batch) {
            batchSequences.add(job.sequence);
        }
        int[] tokens;
        long started = System.nanoTime();
        try {
            tokens = engine.decodeStep(batchSequences);
        } catch (ComputeStoppedException stopped) {
            // ── SAFE POINT: every sequence of the step was cancelled while it computed; none advanced. ──
            for (DecodeJob job : batch) {
                RequestLogging.with(job.requestId(), () -> {
                    String where = "layer=" + stopped.layer() + "/" + stopped.layers() + " step=" + step;
                    if (lifecycle.cancel(job, JobState.RUNNING, "decode", "STOPPED", job.generated + " tokens " + where,
                            LifecycleEvent.of(LifecycleEventType.LEFT_BATCH, job.requestId()).withStep(step)
                                    .withTokens(job.generated), aborted -> aborted.withLayer(stopped.layer()))) {
                        log.info("requestId={} left the batch inside step {} at layer {} of {}, after {} tokens",
                                job.requestId(), step, stopped.layer(), stopped.layers(), job.generated);
                    }
                });
            }
            batch.clear();
            running = 0;
            return true;
        } catch (RuntimeException e) {
            // The step failed (not a cancel): every sequence in it ends FAILED, with an error its client sees at
            // once, and its pages go back. Left in the batch they would fail every later step, and their clients
            // would wait for tokens that never come.
            for (DecodeJob job : batch) {
                RequestLogging.with(job.requestId(), () -> {
                    log.error("requestId={} decode step {} failed after {} tokens", job.requestId(), step,
                            job.generated, e);
                    lifecycle.fail(job, JobState.RUNNING, Failed.ENGINE_FAILED,
                            "decode step failed: " + e.getMessage());
                });
            }
            batch.clear();
            running = 0;
            return true;
        }
        long took = System.nanoTime() - started;
        stepNanos = stepNanos <= 0 ? took : stepNanos + (took - stepNanos) / 8;
        for (int i = 0; i < tokens.length; i++) {
            DecodeJob job = batch.get(i);
            int token = tokens[i];
            if (token == InferenceEngine.STOPPED) {
                // ── SAFE POINT, per sequence: cancelled while the step computed, the engine left it out of the
                //    rest of the step (no attention, head rows or sample after its stop); it emits nothing more. ──
                RequestLogging.with(job.requestId(), () -> leftInsideStep(job, step));
                continue;
            }
            RequestLogging.with(job.requestId(), () -> emitToken(job, token, step));
        }
        batch.removeIf(job -> job.state() != JobState.RUNNING);
        running = batch.size();
        return true;
    }

    /** A job whose sequence the engine left out of step {@code step} for its stop leaves the batch now. */
    private void leftInsideStep(DecodeJob job, long step) {
        int layer = job.sequence.stoppedAtLayer();
        int layers = engine.config().layers();
        if (job.cancelRequest() == null) {
            // Only a cancel requests the stop (onCancel); a stop without one would leave it out of every step.
            lifecycle.fail(job, JobState.RUNNING, Failed.ENGINE_FAILED, "the engine stopped the sequence");
            return;
        }
        if (lifecycle.cancel(job, JobState.RUNNING, "decode", "STOPPED",
                job.generated + " tokens layer=" + layer + "/" + layers + " step=" + step,
                LifecycleEvent.of(LifecycleEventType.LEFT_BATCH, job.requestId()).withStep(step)
                        .withTokens(job.generated), aborted -> aborted.withLayer(layer))) {
            log.info("requestId={} left the batch inside step {} at layer {} of {}, after {} tokens", job.requestId(),
                    step, layer, layers, job.generated);
        }
    }

    // ------------------------------------------------------------------------------------------ state

    /** Decode steps started since start; the journal's step numbers. */
    public long stepsStarted() {
        return stepsStarted;
    }

    public int awaitingKv() {
        return awaitingKv;
    }

    /** Requests in the admission queue, waiting for KV pages. */
    public int queuedForPages() {
        return queuedForPages;
    }

    @Override
    public int waiting() {
        return awaitingKv + queuedForPages;
    }

    @Override
    public int running() {
        return running;
    }

    @Override
    protected boolean idle() {
        return running == 0 && awaitingKv == 0 && queuedForPages == 0 && ready.isEmpty();
    }

    /**
     * The admission queue is full, the request waited its maximum for pages, or the worker is draining: the gateway
     * answers 503.
     */
    public static final class NoCapacityException extends RuntimeException {
        private final transient Duration retryAfter;

        NoCapacityException(String message) {
            this(message, null);
        }

        NoCapacityException(String message, Duration retryAfter) {
            super(message, null, false, false);
            this.retryAfter = retryAfter;
        }

        /** When a retry may be admitted, estimated from the work in hand; null for the configured default. */
        public Duration retryAfter() {
            return retryAfter;
        }
    }
}
