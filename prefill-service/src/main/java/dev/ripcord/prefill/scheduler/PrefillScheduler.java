package dev.ripcord.prefill.scheduler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import dev.ripcord.cancel.Sabotage;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.engine.ComputeStoppedException;
import dev.ripcord.engine.KvPoolExhaustedException;
import dev.ripcord.engine.PrefixCacheListener;
import dev.ripcord.engine.PrefixCacheStats;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.SendSession;
import dev.ripcord.kv.Side;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.TransferMetadata;
import dev.ripcord.protocol.prefix.PrefixKeys;
import dev.ripcord.worker.WireSampling;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.RequestLogging;
import dev.ripcord.worker.TransferClock;
import dev.ripcord.worker.TransferThroughput;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.JobLifecycle;
import dev.ripcord.worker.job.JobState;
import dev.ripcord.worker.job.LatencyBuckets;
import dev.ripcord.worker.job.WorkerScheduler;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;
import org.slf4j.LoggerFactory;

/**
 * The prefill worker's request lifecycle: what chunked prefill adds to the shared {@link JobLifecycle}.
 *
 * <pre>
 *  submit ─► full queue, or a start estimated past max-wait ⇒ 503 with an estimated Retry-After
 *         ─► register (a tombstone cancels it here, before any work)
 *         ─► connect the transfer session (non-blocking) ─► queue (bounded)                      WAITING
 *  engine loop, one step at a time:
 *     a queued prompt past max-wait ends FAILED busy (its Retry-After estimate in the message)
 *     ── CANCEL CHECK POINT ── every running job whose cancel was observed stops here, between chunks
 *     admit what the {@link PrefillPolicy} starts: shortest first with aging, while fewer than max-running
 *        run and the KV pool (free and evictable cached pages) holds the prompt's pages          ─► RUNNING
 *        (the prompt's longest cached page-aligned prefix is taken from the prefix cache; the chunks compute the
 *         rest, and the first push sends the cached pages with the first chunk's)
 *     pick the running job the policy picks (smallest remaining tokens minus credit; one whose next chunk's
 *        pages are not free waits) and
 *        compute one chunk: ── SAFE POINTS ── a cancel observed while it computes requests the engine's stop on
 *                                 the job's sequence, and the chunk stops before the next work item of the layer
 *                                 in progress (or at the next layer boundary); it is discarded (never sent), and
 *                                 the journal's STOPPED says at or inside which layer
 *        push the chunk's finished pages to decode, emit CHUNK
 *        after the last chunk: sample the first token, complete the transfer with it          ─► DONE
 *  a cancel for a WAITING job removes it from the queue at once (no engine work ever happens for it);
 *  a cancel while the transfer completes aborts the transfer
 *  every cancel aborts the send session with the cancel, typed, so decode learns why
 *  pages are freed only after the send session is RELEASED: no write may still be reading them
 * </pre>
 *
 * <p>Only completed chunks are sent: a chunk's pages are pushed after it computed, and a stopped chunk pushes
 * nothing (its positions are not counted; its pages, partly written, are freed with the rest once the aborted send
 * session is released). The journal's {@code CANCEL_OBSERVED} says, for a prompt whose chunk was computing, where
 * the forward was ({@code chunk=C layer=B/L}: boundary {@code B} of {@code L} layers, so layer {@code B} was
 * computing) and {@code STOPPED} where it stopped ({@code chunk=C layer=M/L} at boundary {@code M}, or
 * {@code chunk=C layer=M/L inside} when it abandoned layer {@code M} part way), so the work done after the cancel
 * is at most {@code M - B} layers, or {@code M + 1 - B} inside (a part of one layer when {@code M = B}).
 *
 * <p>Every engine call happens on the {@link EngineLoop} thread. Cancels arrive on any thread (Netty, Kafka
 * consumer, a transfer's event loop) through the registry, whose handler only records the request, ends a job that
 * has not started, and wakes the loop.
 */
@Component
public final class PrefillScheduler extends WorkerScheduler<PrefillJob, PrefillEvent> {

    private static final Logger log = LoggerFactory.getLogger(PrefillScheduler.class);

    private final PrefillProperties properties;
    private final PrefillPolicy<PrefillJob> policy;
    private final LongSupplier clock;
    /**
     * Prompt tokens the engine computes per second, measured over the chunks (an exponential average), or 0 before
     * the first chunk: what turns the queue's remaining work into a wait and a {@code Retry-After}.
     */
    private volatile double tokensPerSecond;
    /** The job whose chunk the engine is computing, or null: the one a cancel's safe-point position refers to. */
    private volatile PrefillJob computing;
    /** The index of the chunk {@link #computing} computes; written before it, read after it. */
    private volatile int computingChunk;

    private final AtomicLong chunksComputed = new AtomicLong();
    private final AtomicLong chunksAfterCancel = new AtomicLong();
    private final Counter chunks;
    private final Counter chunksAfterCancelCounter;
    private final Counter tokensAfterCancel;
    private final Timer prefillTime;
    private final TransferThroughput transferThroughput;
    private final KvSendBursts sendBursts;
    /** {@link PrefixKeys#seed} for this worker's model and page size without a salt (the usual case). */
    private final long cacheSeedNoSalt;

    /** A scheduler whose prefix cache tells nobody of its changes (in-process tests). */
    public PrefillScheduler(WorkerContext context, PrefillProperties properties) {
        this(context, properties, PrefixCacheListener.NONE, System::nanoTime);
    }

    /**
     * A bean: closed, hence drained, before the {@link WorkerContext} it works with. The engine's prefix cache
     * tells {@code listeners}' bean (the publisher of page events, where there is one) of every change, starting
     * with a {@code cleared()}: this worker's cache starts empty, whatever it held before a restart.
     */
    @Autowired
    public PrefillScheduler(WorkerContext context, PrefillProperties properties,
                            ObjectProvider<PrefixCacheListener> listeners) {
        this(context, properties, listeners.getIfAvailable(() -> PrefixCacheListener.NONE), System::nanoTime);
    }

    public PrefillScheduler(WorkerContext context, PrefillProperties properties, PrefixCacheListener listener) {
        this(context, properties, listener, System::nanoTime);
    }

    /** A test's scheduler on its own clock, whose prefix cache tells nobody of its changes. */
    PrefillScheduler(WorkerContext context, PrefillProperties properties, LongSupplier clock) {
        this(context, properties, PrefixCacheListener.NONE, clock);
    }

    /**
     * @param listener told of every prefix-cache change
     * @param clock    what the maximum wait and the measured speed read: {@link System#nanoTime()}, or a test's own
     *                 clock so that waits and estimates are numbers it chooses
     */
    PrefillScheduler(WorkerContext context, PrefillProperties properties, PrefixCacheListener listener,
                     LongSupplier clock) {
        super("prefill", context, c -> c, f -> f);
        this.properties = properties;
        this.clock = clock;
        this.policy = new PrefillPolicy<>(properties.maxRunning(), properties.chunkTokens(),
                pool.layout().pageTokens(), properties.queueCapacity());
        this.cacheSeedNoSalt = PrefixKeys.seed(context.pairing().model(), pool.layout().pageTokens(), null);
        engine.onPrefixCacheChange(new LoggedCacheChanges(listener));
        // This worker's cache starts empty, whatever a previous process of it held: void what was published before.
        engine.clearPrefixCache();
        MeterRegistry meters = context.meters();
        Gauge.builder("ripcord.prefill.queue", policy, PrefillPolicy::waiting)
                .description("prompts waiting for a running slot").register(meters);
        Gauge.builder("ripcord.prefill.running", policy, PrefillPolicy::running)
                .description("prompts in chunked prefill").register(meters);
        this.chunks = Counter.builder("ripcord.prefill.chunks").description("prefill chunks computed")
                .register(meters);
        this.chunksAfterCancelCounter = Counter.builder("ripcord.prefill.chunks.after.cancel")
                .description("chunks that finished computing after their request's cancel was observed")
                .register(meters);
        this.tokensAfterCancel = Counter.builder("ripcord.prefill.tokens.after.cancel")
                .description("prompt tokens computed after their request's cancel was observed").register(meters);
        this.prefillTime = Timer.builder("ripcord.request.prefill.time")
                .description("prefill started -> every chunk computed and the first token sampled")
                .serviceLevelObjectives(LatencyBuckets.requestLatency()).register(meters);
        FunctionCounter.builder("ripcord.prefix.cache.queries", engine, e -> e.prefixCacheStats().queriedTokens())
                .description("prompt tokens looked up in the prefix cache").register(meters);
        FunctionCounter.builder("ripcord.prefix.cache.hits", engine, e -> e.prefixCacheStats().hitTokens())
                .description("prompt tokens whose KV came from the prefix cache")
                .register(meters);
        Gauge.builder("ripcord.prefix.cache.pages", engine, e -> e.prefixCacheStats().pagesCached())
                .description("KV pages in the prefix cache, held by requests or not").register(meters);
        this.transferThroughput = new TransferThroughput(meters);
        this.sendBursts = new KvSendBursts(meters, System::nanoTime);
        lifecycle.observedAt(this::forwardPosition);
        lifecycle.observedChunk(job -> computing == job ? computingChunk : null);
        startLoop();
    }

    // ------------------------------------------------------------------------------------------ admission

    /**
     * Admits a prompt: registers it, starts connecting its transfer session and queues it.
     *
     * @throws QueueFullException when the queue is full. Checked first, before anything is registered or
     *         connected, so decode's receive session is untouched and the gateway may retry elsewhere; only when
     *         concurrent admissions fill the last slot between that check and the enqueue has the session been
     *         connected, and it is then aborted.
     * @throws dev.ripcord.cancel.DuplicateRegistrationException when the ID is already live here
     * @throws IllegalArgumentException when the transfer descriptor cannot be used
     */
    public PrefillJob submit(PrefillRequest request) {
        if (!accepting()) {
            throw new QueueFullException("prefill worker is shutting down", null);
        }
        int tokens = request.tokens().length;
        if (policy.waiting() >= properties.queueCapacity()) {
            throw new QueueFullException("prefill queue is full (" + properties.queueCapacity() + ")", retryAfter());
        }
        if (policy.pagesFor(tokens) > pool.pageCount()) {
            throw new IllegalArgumentException("a prompt of " + tokens + " tokens needs " + policy.pagesFor(tokens)
                    + " KV pages; the pool has " + pool.pageCount());
        }
        double speed = tokensPerSecond;
        if (speed > 0) {
            double wait = policy.tokensAhead(tokens) / speed;
            if (wait > properties.maxWait().toNanos() / 1e9) {
                throw new QueueFullException("prefill would start in about %.1f s, past its maximum wait of %s"
                        .formatted(wait, properties.maxWait()), retryAfter());
            }
        }
        ReceiveDescriptor descriptor = ReceiveDescriptor.parse(request.transfer());
        SamplingParams sampling = WireSampling.toEngine(request.sampling());
        int pageTokens = pool.layout().pageTokens();
        long seed = request.cacheSalt() == null || request.cacheSalt().isEmpty() ? cacheSeedNoSalt
                : PrefixKeys.seed(context.pairing().model(), pageTokens, request.cacheSalt());
        PrefillJob job = new PrefillJob(request.requestId(), request.tokens(), descriptor, sampling,
                PrefixKeys.keys(seed, pageTokens, request.tokens()));
        // Registered before the engine loop can see the job; a tombstone cancels it right here.
        lifecycle.register(job, this::onCancel);
        if (job.state().isTerminal()) {
            return job;
        }
        // Connect now, not when the prompt starts: decode's receive session must see its sender attach within the
        // attach timeout however long the prompt waits in this queue. connect() never blocks.
        SendSession send;
        try {
            send = context.agent().connect(job.descriptor);
        } catch (RuntimeException e) {
            lifecycle.refuse(job);
            throw new IllegalArgumentException("cannot connect to the KV receiver: " + e.getMessage(), e);
        }
        job.send = send;
        // Decode aborting the transfer for a cancel is that cancel here too, in whatever phase the job is.
        send.released().whenComplete((state, e) -> lifecycle.cancelFromPeer(job, send.abortReason(), Side.RECEIVER));
        PrefillPolicy.Entry<PrefillJob> entry = policy.enqueue(job, tokens, clock.getAsLong());
        if (entry == null) {
            send.abort("prefill queue is full");
            lifecycle.refuse(job);
            throw new QueueFullException("prefill queue is full (" + properties.queueCapacity() + ")", retryAfter());
        }
        job.entry = entry;
        int ahead = policy.waiting() - 1 + policy.running();
        lifecycle.record(job, "QUEUED", ahead, LifecycleEvent.of(LifecycleEventType.QUEUED, job.requestId())
                .withDetail(Integer.toString(ahead)));
        job.emit(new PrefillEvent.Queued(ahead));
        JobCancel.Request cancel = job.cancelRequest();
        if (cancel != null) {
            // A cancel raced with the assignments above and may have missed the session.
            send.abort(cancel.reason(), cancel.source());
        }
        loop.wakeUp();
        return job;
    }

    /** The registry's abort handler: quick and non-blocking, on whatever thread delivered the cancel. */
    private void onCancel(PrefillJob job, JobCancel.Request cancel) {
        if (chunkAfterCancel(job)) {
            return;
        }
        // A tombstone is delivered inside register(), before submit() has queued the job: an abort at admission.
        boolean atAdmission = cancel.source() == CancelSource.TOMBSTONE;
        if (lifecycle.cancel(job, JobState.WAITING, "queued",
                atAdmission ? "CANCELLED_AT_ADMISSION" : "REMOVED_FROM_QUEUE", cancel.reason())) {
            PrefillPolicy.Entry<PrefillJob> entry = job.entry;
            if (entry != null) { // else not queued yet: the loop drops it when it comes to start it
                policy.remove(entry);
            }
            abortTransfer(job, cancel);
            log.info("requestId={} cancelled {}: no prefill work was done", job.requestId(),
                    atAdmission ? "at admission" : "while queued");
        } else if (job.finishing) {
            // Every chunk is computed and the transfer is completing: abort it; its failure ends the job.
            abortTransfer(job, cancel);
            if (job.transferFailed) {
                stopFinishing(job);
            }
        } else {
            // Running: the chunk in progress (if any) stops at its next safe point inside it; otherwise the check point
            // before the next chunk stops the job. A job whose sequence is not set yet is caught there too.
            Sequence sequence = job.sequence;
            if (sequence != null) {
                sequence.requestStop();
            }
            log.info("requestId={} cancel observed; prefill stops at the next safe point", job.requestId());
            loop.wakeUp();
        }
    }

    /**
     * Bench-only ({@link Sabotage#CHUNK_AFTER_CANCEL}, docs/operations.md): the first cancel observed for a prompt
     * being admitted (a tombstone), queued or running, none of whose chunks was computing then, is left pending: no
     * stop is requested, the prompt is not taken out of the queue, and the loop computes its next chunk before it
     * stops it at the check point. (Admitted with a tombstone, its transfer is aborted at once; the chunk is
     * computed all the same.)
     */
    private boolean chunkAfterCancel(PrefillJob job) {
        if (job.finishing || job.state().isTerminal() || computing == job
                || !Sabotage.CHUNK_AFTER_CANCEL.fire()) {
            return false;
        }
        job.chunkAfterCancel = true;
        log.warn("requestId={} sabotaged: chunk-after-cancel (a bench-only switch) computes one more chunk after the "
                + "cancel", job.requestId());
        loop.wakeUp();
        return true;
    }

    /**
     * For {@code CANCEL_OBSERVED}: where the engine's forward was for this job when its cancel was observed
     * ({@code " chunk=C layer=B/L"}), or nothing when it was not computing a chunk of it.
     */
    private String forwardPosition(PrefillJob job) {
        if (computing != job) {
            return "";
        }
        int boundary = engine.forwardBoundary();
        return boundary < 0 || computing != job ? ""
                : " chunk=" + job.chunks + " layer=" + boundary + "/" + engine.config().layers();
    }

    private static void abortTransfer(PrefillJob job, JobCancel.Request cancel) {
        SendSession send = job.send;
        if (send != null) {
            send.abort(cancel.reason(), cancel.source());
        }
    }

    // ------------------------------------------------------------------------------------------ engine loop

    /**
     * One unit of work on the engine loop: refuse the prompts past their maximum wait, stop the cancelled, start
     * what the policy admits, then one chunk of the running prompt the policy picks. Nothing to compute (none
     * running, or none whose next chunk's pages are free) parks the loop until a task or a wake-up.
     */
    @Override
    protected boolean step() {
        boolean worked = expire();
        for (PrefillPolicy.Entry<PrefillJob> entry : policy.runningEntries()) {
            PrefillJob job = entry.job;
            if (job.isCancelRequested() && !job.chunkAfterCancel) {
                // ── CANCEL CHECK POINT: between chunks, the safe point of chunked prefill. ──
                RequestLogging.with(job.requestId(), () -> stopCancelled(job, null));
                worked = true;
            }
        }
        admit();
        PrefillPolicy.Entry<PrefillJob> next = policy.next(pool.pagesAllocatable());
        if (next == null) {
            return worked;
        }
        PrefillJob job = next.job;
        boolean[] computed = {false};
        RequestLogging.with(job.requestId(), () -> {
            if (job.isCancelRequested() && !job.chunkAfterCancel) {
                stopCancelled(job, null);
                computed[0] = true;
            } else {
                computed[0] = computeChunk(job, next);
                if (computed[0]) {
                    job.chunkAfterCancel = false; // bench-only sabotage: its one chunk computed
                }
            }
        });
        return worked || computed[0];
    }

    /** Ends, with 503's {@link Failed#BUSY}, the queued prompts that waited longer than the maximum wait. */
    private boolean expire() {
        List<PrefillPolicy.Entry<PrefillJob>> expired = policy.expire(clock.getAsLong() - properties.maxWait().toNanos());
        for (PrefillPolicy.Entry<PrefillJob> entry : expired) {
            PrefillJob job = entry.job;
            Duration after = retryAfter();
            String message = "waited longer than the maximum wait of %s in the prefill queue; retry after %d s"
                    .formatted(properties.maxWait(), Math.max(1, after.toSeconds()));
            RequestLogging.with(job.requestId(), () -> {
                if (job.send != null) {
                    job.send.abort(message);
                }
                lifecycle.fail(job, JobState.WAITING, Failed.BUSY, message, after);
            });
        }
        return !expired.isEmpty();
    }

    private void admit() {
        for (PrefillPolicy.Entry<PrefillJob> entry : policy.admit(pool.pagesAllocatable())) {
            PrefillJob job = entry.job;
            if (job.moveTo(JobState.WAITING, JobState.RUNNING)) {
                RequestLogging.with(job.requestId(), () -> start(job));
            } else {
                policy.remove(entry); // cancelled meanwhile; its canceller ended it
            }
        }
    }

    /**
     * What {@code Retry-After} says when prefill refuses: the time the queue's remaining work takes at the measured
     * speed (at least a second), or the configured {@code retry-after} before anything was measured.
     */
    Duration retryAfter() {
        double speed = tokensPerSecond;
        if (speed <= 0) {
            return properties.retryAfter();
        }
        return Duration.ofSeconds(Math.max(1, (long) Math.ceil(policy.remainingTokens() / speed)));
    }

    private void start(PrefillJob job) {
        Sequence sequence;
        try {
            sequence = engine.newSequence(job.sampling);
        } catch (RuntimeException e) {
            fail(job, "cannot start prefill: " + e.getMessage(), e);
            return;
        }
        job.sequence = sequence;
        job.startedNanos = System.nanoTime();
        recordQueueTime(job);
        lifecycle.freeWhenReleased(job, job.send.released(), () -> engine.free(sequence));
        try {
            job.cachedTokens = engine.reusePrefix(sequence, job.tokens, job.pageKeys);
        } catch (RuntimeException e) {
            fail(job, "cannot look the prompt up in the prefix cache: " + e.getMessage(), e);
            return;
        }
        job.tokensDone = job.cachedTokens;
        // Cached tokens are done without being computed: nobody's credit grows for them.
        policy.reused(job.entry, job.cachedTokens);
        if (job.cachedTokens > 0) {
            int pages = job.cachedTokens / pool.layout().pageTokens();
            job.pagesLoggedCached = pages;
            logCache(LifecycleEvent.of(LifecycleEventType.PREFIX_HIT, job.requestId()).withPages(pages)
                    .withTokens(job.cachedTokens).withDetail(hexKeys(job.pageKeys, pages - 1, pages)));
        }
        lifecycle.record(job, "STARTED", job.tokens.length + " tokens, " + job.cachedTokens + " cached",
                LifecycleEvent.of(LifecycleEventType.STARTED, job.requestId()).withTokens(job.tokens.length));
        log.debug("requestId={} prefill started: {} tokens ({} from the prefix cache) in chunks of {}",
                job.requestId(), job.tokens.length, job.cachedTokens, properties.chunkTokens());
        job.emit(new PrefillEvent.Started());
    }

    /** Computes the next chunk of {@code job}; false when the pool lacked its pages after all (it waits). */
    private boolean computeChunk(PrefillJob job, PrefillPolicy.Entry<PrefillJob> entry) {
        int from = job.tokensDone;
        int to = policy.chunkEnd(entry);
        computingChunk = job.chunks;
        computing = job;
        long started = clock.getAsLong();
        try {
            engine.prefill(job.sequence, job.tokens, from, to);
        } catch (ComputeStoppedException stopped) {
            computing = null;
            // ── SAFE POINT: the cancel stopped the chunk between two layers; nothing of it is sent. ──
            stopCancelled(job, stopped);
            return true;
        } catch (KvPoolExhaustedException e) {
            // Nothing was computed or allocated: the prompt waits for pages, as one that has not started would.
            computing = null;
            return false;
        } catch (RuntimeException e) {
            computing = null;
            fail(job, "prefill failed: " + e.getMessage(), e);
            return true;
        }
        measure(to - from, clock.getAsLong() - started);
        policy.computed(entry, to - from);
        job.tokensDone = to;
        job.chunks++;
        lifecycle.record(job, "CHUNK", job.chunks - 1, LifecycleEvent.of(LifecycleEventType.CHUNK_DONE,
                job.requestId()).withChunk(job.chunks - 1).withTokens(to - from));
        logCachedPages(job);
        // Only now: a cancel observed before this line names this chunk as computing (CANCEL_OBSERVED chunk=C), one
        // observed after it follows the chunk's CHUNK_DONE in the log. Cleared earlier, a cancel could come between
        // the two and see a chunk that finishes after it without having been named (the audit's
        // NO_CHUNK_AFTER_CANCEL).
        computing = null;
        chunksComputed.incrementAndGet();
        chunks.increment();
        if (job.isCancelRequested()) {
            // The cancel arrived while this chunk was computing: the one chunk the contract allows.
            chunksAfterCancel.incrementAndGet();
            chunksAfterCancelCounter.increment();
            tokensAfterCancel.increment(to - from);
        }
        boolean last = to == job.tokens.length;
        try {
            pushFinishedPages(job, last);
        } catch (RuntimeException e) {
            // A send that throws (rather than failing its future) must still end the job, not leave it computing.
            fail(job, "sending KV failed: " + e.getMessage(), e);
            return true;
        }
        job.emit(new PrefillEvent.Chunk(job.chunks - 1, to));
        if (last) {
            finish(job);
        }
        return true;
    }

    /** Folds one chunk's speed into {@link #tokensPerSecond} (an exponential average, weight 1/4). */
    private void measure(int tokens, long nanos) {
        double speed = tokens * 1e9 / Math.max(1, nanos);
        double before = tokensPerSecond;
        tokensPerSecond = before <= 0 ? speed : before + (speed - before) / 4;
    }

    /**
     * After a completed chunk: the job's complete pages that now stand in the prefix cache, for the lifecycle log
     * (the audit's {@code PAGE_CACHED_WHEN_COMPLETE} and {@code HIT_ONLY_CACHED_PAGES}).
     */
    private void logCachedPages(PrefillJob job) {
        int standing = job.sequence.cachedPrefixPages();
        if (standing <= job.pagesLoggedCached) {
            return;
        }
        int pageTokens = pool.layout().pageTokens();
        String keys = hexKeys(job.pageKeys, job.pagesLoggedCached, standing);
        job.pagesLoggedCached = standing;
        logCache(LifecycleEvent.of(LifecycleEventType.PAGES_CACHED, job.requestId()).withChunk(job.chunks - 1)
                .withPages(standing).withTokens(standing * pageTokens).withDetail(keys));
    }

    /**
     * A prefix-cache event on the lifecycle log only (the journal keeps the scheduler's own steps), published on
     * the engine loop right after the step it follows, hence after it in this process's sequence.
     */
    private void logCache(LifecycleEvent draft) {
        if (context.lifecycle().isEnabled()) {
            context.lifecycle().emit(draft);
        }
    }

    /** {@code keys[from..to)} as 16-digit hex, space-separated: how the lifecycle log names cached pages. */
    static String hexKeys(long[] keys, int from, int to) {
        StringBuilder out = new StringBuilder();
        for (int i = from; i < to; i++) {
            if (!out.isEmpty()) {
                out.append(' ');
            }
            out.append(java.util.HexFormat.of().toHexDigits(keys[i]));
        }
        return out.toString();
    }

    /**
     * The engine's prefix-cache changes: told to the worker's listener (the page-event publisher, where there is
     * one), and evictions and clears to the lifecycle log as process-wide events. Runs on whichever thread changed
     * the cache, outside the engine's locks; never blocks.
     */
    private final class LoggedCacheChanges implements PrefixCacheListener {
        private final PrefixCacheListener downstream;

        LoggedCacheChanges(PrefixCacheListener downstream) {
            this.downstream = downstream;
        }

        @Override
        public void stored(long[] keys) {
            downstream.stored(keys);
        }

        @Override
        public void removed(long[] keys) {
            logCache(LifecycleEvent.of(LifecycleEventType.PAGES_EVICTED, null).withPages(keys.length)
                    .withDetail(hexKeys(keys, 0, keys.length)));
            downstream.removed(keys);
        }

        @Override
        public void cleared() {
            logCache(LifecycleEvent.of(LifecycleEventType.PREFIX_CACHE_CLEARED, null));
            downstream.cleared();
        }
    }

    /**
     * Sends the pages no later chunk will write: every full page, and the last partial page after the last chunk.
     * A page is never sent twice and never modified while a send may be reading it. The pages one chunk finished
     * go as one batch ({@link SendSession#sendBatch}): gathered from wherever the pool holds them into the request's
     * next logical pages, announced and acknowledged once, so a burst costs one control round trip, not one per
     * page. Pool pages that follow each other are merged into one span.
     */
    private void pushFinishedPages(PrefillJob job, boolean last) {
        int pageTokens = pool.layout().pageTokens();
        int finished = last ? pool.layout().pagesFor(job.tokensDone) : job.tokensDone / pageTokens;
        if (finished <= job.pagesSent) {
            return;
        }
        long pageBytes = pool.pageBytes();
        List<ByteRange> spans = new ArrayList<>();
        for (int p = job.pagesSent; p < finished; p++) {
            long src = pool.offsetOf(job.sequence.poolPage(p));
            ByteRange tail = spans.isEmpty() ? null : spans.getLast();
            if (tail != null && tail.end() == src) {
                spans.set(spans.size() - 1, new ByteRange(tail.offset(), tail.length() + pageBytes));
            } else {
                spans.add(new ByteRange(src, pageBytes));
            }
        }
        long bytes = (finished - job.pagesSent) * pageBytes;
        long dst = job.pagesSent * pageBytes;
        KvSendBursts.Burst burst = sendBursts.start();
        CompletableFuture<Void> sent = job.transferClock.time(bytes,
                () -> job.send.sendBatch(context.poolRegion(), spans, dst));
        job.sends.add(sent);
        burst.whenAcknowledged(List.of(sent), bytes);
        job.pagesSent = finished;
    }

    private void finish(PrefillJob job) {
        int first;
        dev.ripcord.engine.TokenLogprobs firstLogprobs;
        try {
            first = engine.sample(job.sequence);
            firstLogprobs = job.sequence.lastLogprobs();
        } catch (RuntimeException e) {
            fail(job, "sampling failed: " + e.getMessage(), e);
            return;
        }
        prefillTime.record(System.nanoTime() - job.startedNanos, TimeUnit.NANOSECONDS);
        policy.remove(job.entry);
        job.finishing = true;
        if (job.isCancelRequested()) {
            abortTransfer(job, job.cancelRequest()); // a cancel that looked before finishing was set
        }
        CompletableFuture.allOf(job.sends.toArray(CompletableFuture[]::new))
                .thenCompose(v -> job.send.complete(TransferMetadata.encodeFirstToken(first,
                        WireSampling.toWire(firstLogprobs))))
                .whenComplete((v, error) -> RequestLogging.with(job.requestId(), () -> {
                    if (error == null) {
                        Backend backend = job.send.backend();
                        TransferClock clock = job.transferClock;
                        transferThroughput.record(backend, clock);
                        if (lifecycle.finish(job, JobState.RUNNING, new PrefillEvent.Done(first, job.cachedTokens),
                                "DONE", "first token " + first + "; " + job.cachedTokens + " cached tokens; KV "
                                        + clock.bytes() + " bytes over " + backend + " in "
                                        + clock.busyNanos() / 1000 + " µs")) {
                            log.info("requestId={} prefill done in {} chunks; KV delivered over {}: {} ({} MB/s), "
                                    + "first token {}", job.requestId(), job.chunks, backend, clock,
                                    Math.round(clock.bytesPerSecond() / 1e6), first);
                        }
                        return;
                    }
                    job.transferFailed = true;
                    if (job.isCancelRequested() || lifecycle.cancelFromPeer(job, error, Side.RECEIVER)) {
                        stopFinishing(job);
                    } else if (lifecycle.fail(job, JobState.RUNNING, Failed.TRANSFER_FAILED,
                            "KV transfer failed: " + rootMessage(error))) {
                        log.warn("requestId={} KV transfer failed after prefill: {}", job.requestId(), error.toString());
                    }
                }));
    }

    /** A cancel ended a job whose transfer was completing; either side may have aborted the transfer. */
    private void stopFinishing(PrefillJob job) {
        if (job.isCancelRequested()) {
            lifecycle.cancel(job, JobState.RUNNING, "transfer", "STOPPED", "transfer in flight");
        }
    }

    /**
     * Ends a cancelled job at a safe point: between chunks ({@code stopped} null), or inside the chunk
     * {@code stopped} interrupted (at a layer boundary, or inside a layer before one of its work items). The send
     * session is aborted (it has carried only completed chunks); pages are freed once it is released.
     */
    private void stopCancelled(PrefillJob job, ComputeStoppedException stopped) {
        JobCancel.Request cancel = job.cancelRequest();
        policy.remove(job.entry);
        abortTransfer(job, cancel);
        String where = stopped == null ? "" : " chunk=" + job.chunks + " layer=" + stopped.layer() + "/"
                + stopped.layers() + (stopped.inside() ? " inside" : "");
        int chunk = job.chunks;
        if (lifecycle.cancel(job, JobState.RUNNING, "prefill", "STOPPED",
                job.tokensDone + "/" + job.tokens.length + " tokens" + where, null,
                aborted -> stopped == null ? aborted : aborted.withChunk(chunk).withLayer(stopped.layer()))) {
            if (stopped == null) {
                log.info("requestId={} prefill stopped at chunk boundary after {} of {} tokens", job.requestId(),
                        job.tokensDone, job.tokens.length);
            } else {
                log.info("requestId={} prefill stopped {} layer {} of {} in chunk {} after {} of {} tokens; the "
                                + "chunk's {} tokens are discarded", job.requestId(),
                        stopped.inside() ? "inside" : "at", stopped.layer(),
                        stopped.layers(), job.chunks, job.tokensDone, job.tokens.length, stopped.tokens());
            }
        }
    }

    private void fail(PrefillJob job, String message, Exception e) {
        log.warn("requestId={} {}", job.requestId(), message, e);
        if (job.entry != null) {
            policy.remove(job.entry);
        }
        if (job.send != null) {
            job.send.abort(message);
        }
        lifecycle.fail(job, job.state(), Failed.ENGINE_FAILED, message);
    }

    private static String rootMessage(Throwable t) {
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return String.valueOf(t.getMessage());
    }

    // ------------------------------------------------------------------------------------------ state

    public int queued() {
        return policy.waiting();
    }

    @Override
    public int waiting() {
        return queued();
    }

    @Override
    public int running() {
        return policy.running();
    }

    @Override
    public long chunksComputed() {
        return chunksComputed.get();
    }

    /** The engine's prefix cache, for metrics and status. */
    public PrefixCacheStats prefixCache() {
        return engine.prefixCacheStats();
    }

    public long chunksAfterCancel() {
        return chunksAfterCancel.get();
    }

    @Override
    protected boolean idle() {
        return policy.running() == 0 && policy.waiting() == 0;
    }

    /**
     * The queue is full, a prompt would wait past the maximum wait, or the worker is draining: 503 with
     * {@code Retry-After}.
     */
    public static final class QueueFullException extends RuntimeException {
        private final transient Duration retryAfter;

        QueueFullException(String message, Duration retryAfter) {
            super(message, null, false, false);
            this.retryAfter = retryAfter;
        }

        /** The estimate of when a retry may be admitted, or null for the configured default. */
        public Duration retryAfter() {
            return retryAfter;
        }
    }
}
