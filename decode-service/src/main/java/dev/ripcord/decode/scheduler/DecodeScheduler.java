package dev.ripcord.decode.scheduler;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.engine.KvPoolExhaustedException;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.TransferMetadata;
import dev.ripcord.worker.Drainable;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.RequestLogging;
import dev.ripcord.worker.SchedulerJournal;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decode worker's request lifecycle, in one place.
 *
 * <pre>
 *  admit (engine loop) ─► register in the CancellationRegistry (a tombstone aborts here, before any work)
 *                      ─► commit pages for prompt + max_tokens (not enough ⇒ refused, 503), reserve the prompt's
 *                         pages, open a receive session into them, answer RESERVED(descriptor)
 *  KV lands, prefill's done notification carries the first token
 *                      ─► adopt the pages, emit token 0, join the batch (continuous batching)
 *  each step:          ── CANCEL CHECK POINT ── cancelled sequences leave the batch
 *                      one batched decode step; every sequence emits a token; finished ones leave
 *  a cancel while AWAITING_KV aborts the receive session; its pages are freed only once the session is RELEASED
 *  (no write can land in them any more), never before
 * </pre>
 *
 * <p>Every engine call happens on the {@link EngineLoop} thread; cancels arrive on any thread and only record
 * the request (and, while awaiting KV, abort the transfer, which is safe from any thread).
 */
public final class DecodeScheduler implements Drainable, AutoCloseable {

    /** Bounded by the transfer lease: an aborted session releases within it even if its peer is silent. */
    private volatile boolean drained;

    private static final Logger log = LoggerFactory.getLogger(DecodeScheduler.class);

    private final InferenceEngine engine;
    private final KvPagePool pool;
    private final TransferAgent agent;
    private final KvRegion poolRegion;
    private final CancellationRegistry registry;
    private final int maxBatch;
    private final EngineLoop loop;
    private final MeterRegistry meters;
    private final Timer cancelToStop;
    private final SchedulerJournal journal;

    private final ArrayDeque<DecodeJob> ready = new ArrayDeque<>();
    private final List<DecodeJob> batch = new ArrayList<>();
    private final List<Sequence> batchSequences = new ArrayList<>();
    private int committedPages;
    private volatile int awaitingKv;
    private volatile int running;
    private volatile boolean accepting = true;
    private final AtomicLong aborts = new AtomicLong();
    private final AtomicLong steps = new AtomicLong();

    public DecodeScheduler(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                           CancellationRegistry registry, DecodeProperties properties, MeterRegistry meters,
                           SchedulerJournal journal) {
        this(engine, agent, poolRegion, registry, properties, meters, journal, false);
    }

    /**
     * @param manualLoop true for a loop without a thread that the caller steps through {@link #engineLoop()}
     *                   (in-process scheduler tests); production passes false
     */
    public DecodeScheduler(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                           CancellationRegistry registry, DecodeProperties properties, MeterRegistry meters,
                           SchedulerJournal journal, boolean manualLoop) {
        this.journal = journal;
        this.engine = engine;
        this.pool = engine.pagePool();
        this.agent = agent;
        this.poolRegion = poolRegion;
        this.registry = registry;
        this.maxBatch = Math.min(properties.maxBatch(), engine.options().maxBatch());
        this.meters = meters;
        this.loop = manualLoop ? EngineLoop.manual("decode-engine", this::step) : new EngineLoop("decode-engine", this::step);
        Gauge.builder("ripcord.decode.awaiting.kv", this, s -> s.awaitingKv)
                .description("requests whose KV is still being transferred").register(meters);
        Gauge.builder("ripcord.decode.running", this, s -> s.running)
                .description("sequences in the decode batch").register(meters);
        Gauge.builder("ripcord.kv.pages.live", pool, KvPagePool::pagesLive)
                .description("KV pages allocated from the engine's pool").register(meters);
        this.cancelToStop = Timer.builder("ripcord.cancel.abort.latency").tag("service", "decode")
                .description("cancel observed by this worker -> its work stopped at a safe point")
                .publishPercentileHistogram().register(meters);
        loop.start();
    }

    // ------------------------------------------------------------------------------------------ admission

    /**
     * Admits a request on the engine loop. The future fails with {@link NoCapacityException} when the pool
     * cannot hold the request (nothing is kept), or completes with the job, whose event stream starts with
     * RESERVED, or with ERROR when a cancel was waiting for it.
     */
    public CompletableFuture<DecodeJob> submit(DecodeRequest request) {
        if (!accepting) {
            return CompletableFuture.failedFuture(new NoCapacityException("decode worker is shutting down"));
        }
        return loop.call(() -> RequestLogging.withResult(request.requestId(), () -> admit(request)));
    }

    private DecodeJob admit(DecodeRequest request) {
        DecodeJob job = new DecodeJob(request);
        job.events.emitOn(loop);
        job.registration = registry.register(job.requestId(), (id, reason, source) -> cancel(job, reason, source));
        if (job.state() == DecodeJob.State.CANCELLED) {
            journal.record(job.requestId(), "CANCELLED_AT_ADMISSION", job.cancelRequest().reason());
            job.registration.complete();
            return job; // a tombstone aborted it: no pages, no session
        }
        int context = engine.config().contextLength();
        int need = pool.layout().pagesFor(Math.min(request.promptTokens() + request.maxTokens(), context));
        if (committedPages + need > pool.pageCount()) {
            job.moveTo(DecodeJob.State.AWAITING_KV, DecodeJob.State.FAILED);
            job.registration.complete();
            throw new NoCapacityException("not enough free KV pages: need " + need + ", "
                    + (pool.pageCount() - committedPages) + " uncommitted of " + pool.pageCount());
        }
        Sequence seq;
        try {
            seq = engine.reserve(request.promptTokens(), sampling(request));
        } catch (KvPoolExhaustedException e) {
            job.moveTo(DecodeJob.State.AWAITING_KV, DecodeJob.State.FAILED);
            job.registration.complete();
            throw new NoCapacityException(e.getMessage());
        }
        job.sequence = seq;
        job.committedPages = need;
        committedPages += need;
        List<ByteRange> targets = new ArrayList<>(seq.pageCount());
        for (int i = 0; i < seq.pageCount(); i++) {
            targets.add(new ByteRange(pool.offsetOf(seq.poolPage(i)), pool.pageBytes()));
        }
        ReceiveSession session = agent.openReceive(job.requestId(), poolRegion, targets);
        job.session = session;
        awaitingKv++;
        session.completion().whenComplete((metadata, error) -> loop.execute(
                () -> RequestLogging.with(job.requestId(), () -> onKv(job, metadata, error))));
        // Pages go back only once no write can land in them: after the session is RELEASED.
        session.released().whenComplete((s, e) -> loop.execute(() -> freeIfTerminal(job)));
        journal.record(job.requestId(), "RESERVED", seq.pageCount() + " pages");
        job.emit(DecodeEvent.reserved(session.descriptor().encode()));
        log.info("requestId={} reserved {} pages ({} committed) for {} prompt tokens; awaiting KV",
                job.requestId(), seq.pageCount(), need, request.promptTokens());
        if (job.isCancelRequested()) {
            // Cancelled between registration and now (from another thread): abort what we just opened.
            session.abort("cancelled: " + job.cancelRequest().reason());
        }
        return job;
    }

    private static SamplingParams sampling(DecodeRequest request) {
        return new SamplingParams((float) request.sampling().temperature(), (float) request.sampling().topP(),
                request.sampling().seed());
    }

    /** The registry's abort handler: quick and non-blocking, on whatever thread delivered the cancel. */
    private void cancel(DecodeJob job, CancelReason reason, CancelSource source) {
        if (!job.requestCancel(reason, source)) {
            return;
        }
        journal.record(job.requestId(), "CANCEL_OBSERVED", reason + " via " + source);
        RequestLogging.with(job.requestId(), () -> {
            if (job.moveTo(DecodeJob.State.AWAITING_KV, DecodeJob.State.CANCELLED)) {
                ReceiveSession session = job.session;
                if (session != null) {
                    // Abort stops acceptance, fences late writes, then releases; pages are freed after that.
                    session.abort("cancelled: " + reason + " via " + source);
                }
                countAbort(job, "transfer", source);
                cancelToStop.record(System.nanoTime() - job.cancelRequest().observedNanos(), TimeUnit.NANOSECONDS);
                log.info("requestId={} cancelled while awaiting KV ({} via {}); transfer aborted", job.requestId(),
                        reason, source);
                job.emit(DecodeEvent.error("cancelled: " + reason));
                job.end();
                if (job.registration != null) {
                    job.registration.complete();
                }
            } else if (job.state() == DecodeJob.State.FAILED) {
                // The transfer failed first, most likely aborted by prefill for this same cancel: the cancel is
                // what ended the job, so it counts as the one abort.
                countAbort(job, "transfer", source);
            } else {
                log.info("requestId={} cancel observed ({} via {}); leaves the batch at the next step",
                        job.requestId(), reason, source);
                loop.wakeUp();
            }
        });
    }

    // ------------------------------------------------------------------------------------------ engine loop

    private void onKv(DecodeJob job, byte[] metadata, Throwable error) {
        awaitingKv--;
        journal.record(job.requestId(), error == null ? "KV_LANDED" : "KV_FAILED",
                error == null ? "" : error.getMessage());
        if (error != null) {
            CancelledUpstream upstream = CancelledUpstream.of(error);
            if (upstream != null && job.state() == DecodeJob.State.AWAITING_KV) {
                // Prefill aborted the transfer for a cancel (it saw it first, e.g. from Kafka): that cancel is what
                // ends this job, so it takes the cancel path (observed once, counted once) rather than a failure,
                // however the race with decode's own copy of the cancel turns out.
                cancel(job, upstream.reason(), upstream.source());
                return; // pages are freed when the session is released
            }
            if (job.moveTo(DecodeJob.State.AWAITING_KV, DecodeJob.State.FAILED)) {
                if (job.isCancelRequested()) {
                    countAbort(job, "transfer", job.cancelRequest().source());
                }
                log.warn("requestId={} KV transfer failed: {}", job.requestId(), error.toString());
                job.emit(DecodeEvent.error("KV transfer failed: " + error.getMessage()));
                job.end();
                job.registration.complete();
            }
            return; // pages are freed when the session is released
        }
        if (!job.moveTo(DecodeJob.State.AWAITING_KV, DecodeJob.State.DECODING)) {
            return; // cancelled as the KV landed; freed on release
        }
        int first = TransferMetadata.decodeFirstToken(metadata);
        engine.adopt(job.sequence, job.request.promptTokens(), first);
        int context = engine.config().contextLength();
        engine.ensureCapacity(job.sequence,
                Math.min(job.request.promptTokens() + job.request.maxTokens(), context));
        log.info("requestId={} KV landed; joins the batch with first token {}", job.requestId(), first);
        if (emitToken(job, first)) {
            return;
        }
        ready.addLast(job);
    }

    /** Emits the job's next token; returns true if that finished the job (which is then freed). */
    private boolean emitToken(DecodeJob job, int token) {
        int index = job.generated++;
        String finish = null;
        if (token == engine.tokenizer().eos() && !job.request.ignoreEos()) {
            finish = "stop";
        } else if (job.generated >= job.request.maxTokens()) {
            finish = "length";
        }
        job.emit(DecodeEvent.token(index, token, finish));
        if (finish == null) {
            return false;
        }
        if (job.moveTo(DecodeJob.State.DECODING, DecodeJob.State.FINISHED)) {
            journal.record(job.requestId(), "FINISHED", job.generated + " tokens, " + finish);
            log.info("requestId={} finished: {} tokens ({})", job.requestId(), job.generated, finish);
            job.end();
            job.registration.complete();
            freeIfTerminal(job);
        }
        return true;
    }

    private boolean step() {
        // Continuous batching: waiting sequences join between steps.
        while (batch.size() < maxBatch && !ready.isEmpty()) {
            batch.add(ready.pollFirst());
        }
        // ── CANCEL CHECK POINT: cancelled sequences leave the batch before the next step. ──
        batch.removeIf(job -> {
            if (!job.isCancelRequested()) {
                return false;
            }
            RequestLogging.with(job.requestId(), () -> stopCancelled(job));
            return true;
        });
        running = batch.size();
        if (batch.isEmpty()) {
            return false;
        }
        batchSequences.clear();
        for (DecodeJob job : batch) {
            batchSequences.add(job.sequence);
        }
        int[] next = engine.decodeStep(batchSequences);
        steps.incrementAndGet();
        for (int i = 0; i < next.length; i++) {
            DecodeJob job = batch.get(i);
            int token = next[i];
            RequestLogging.with(job.requestId(), () -> emitToken(job, token));
        }
        batch.removeIf(job -> job.state() != DecodeJob.State.DECODING);
        running = batch.size();
        return true;
    }

    private void stopCancelled(DecodeJob job) {
        if (!job.moveTo(DecodeJob.State.DECODING, DecodeJob.State.CANCELLED)) {
            return;
        }
        JobCancel.Request cancel = job.cancelRequest();
        journal.record(job.requestId(), "STOPPED", job.generated + " tokens");
        cancelToStop.record(System.nanoTime() - cancel.observedNanos(), TimeUnit.NANOSECONDS);
        countAbort(job, "decode", cancel.source());
        log.info("requestId={} left the batch after {} tokens ({} via {})", job.requestId(), job.generated,
                cancel.reason(), cancel.source());
        job.emit(DecodeEvent.error("cancelled: " + cancel.reason()));
        job.end();
        job.registration.complete();
        freeIfTerminal(job);
    }

    /** Frees the job's pages once it is terminal and its session released; runs on the loop, at most once. */
    private void freeIfTerminal(DecodeJob job) {
        if (job.sequence == null || !job.state().isTerminal() || !job.session.released().isDone()) {
            return;
        }
        engine.free(job.sequence);
        job.sequence = null;
        journal.record(job.requestId(), "FREED", "");
        committedPages -= job.committedPages;
    }

    /** Counts the job's abort (metric and status), once per job whichever path gets here first. */
    private void countAbort(DecodeJob job, String phase, CancelSource source) {
        if (job.claimAbortCount()) {
            count(phase, source);
            aborts.incrementAndGet();
        }
    }

    private void count(String phase, CancelSource source) {
        meters.counter("ripcord.cancellations", "service", "decode", "phase", phase,
                "path", source.name().toLowerCase(Locale.ROOT)).increment();
    }

    // ------------------------------------------------------------------------------------------ state

    /** The loop every engine call runs on; tests step a manual one themselves. */
    public EngineLoop engineLoop() {
        return loop;
    }

    public int awaitingKv() {
        return awaitingKv;
    }

    public int running() {
        return running;
    }

    public long aborts() {
        return aborts.get();
    }

    public void stopAccepting() {
        accepting = false;
    }

    /**
     * Graceful shutdown: stop admitting, let work in flight finish for up to {@code grace}, then cancel the rest
     * ({@code SHUTDOWN}, which takes the same path as any cancel) and wait, bounded by the transfer lease, for
     * every page to come back.
     */
    @Override
    public void drain(Duration grace) {
        if (drained) {
            return;
        }
        Drainable.drainInOrder(this::stopAccepting, () -> running == 0 && awaitingKv == 0 && ready.isEmpty(), grace, registry, pool::pagesLive,
                log);
        drained = true;
    }

    /** Drains without a grace period if nobody drained first, then stops the engine loop. */
    @Override
    public void close() {
        drain(Duration.ZERO);
        loop.close(Duration.ofSeconds(10));
    }

    /**
     * A transfer that the sender aborted because its request was cancelled: prefill aborts with
     * {@code "cancelled: <REASON> via <SOURCE>"} (see PrefillScheduler).
     */
    record CancelledUpstream(CancelReason reason, CancelSource source) {
        private static final java.util.regex.Pattern DETAIL =
                java.util.regex.Pattern.compile("^cancelled: ([A-Z_]+) via ([A-Z_]+)");

        static CancelledUpstream of(Throwable error) {
            return dev.ripcord.kv.TransferAbortedException.reasonOf(error)
                    .filter(r -> r.cause() == dev.ripcord.kv.AbortReason.Cause.REQUESTED
                            && r.origin() == dev.ripcord.kv.Side.SENDER && r.detail() != null)
                    .map(r -> DETAIL.matcher(r.detail()))
                    .filter(java.util.regex.Matcher::find)
                    .map(m -> {
                        try {
                            return new CancelledUpstream(CancelReason.valueOf(m.group(1)),
                                    CancelSource.valueOf(m.group(2)));
                        } catch (IllegalArgumentException unknown) {
                            return null;
                        }
                    })
                    .orElse(null);
        }
    }

    /** The pool cannot hold the request, or the worker is draining: the gateway answers 503. */
    public static final class NoCapacityException extends RuntimeException {
        NoCapacityException(String message) {
            super(message, null, false, false);
        }
    }
}
