package dev.ripcord.prefill.scheduler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.TransferMetadata;
import dev.ripcord.worker.Drainable;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.RequestLogging;
import dev.ripcord.worker.SchedulerJournal;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prefill worker's request lifecycle, in one place.
 *
 * <pre>
 *  submit ─► register in the CancellationRegistry (a tombstone aborts here, before any work)
 *         ─► connect the transfer session (non-blocking) ─► FIFO queue (bounded: full ⇒ 503)
 *  engine loop, one step at a time:
 *     admit from the queue head while fewer than max-running are running
 *     pick the next running job (round-robin) and
 *        ── CANCEL CHECK POINT ── a job whose cancel was observed stops here: at most the chunk that was
 *                                 being computed when the cancel arrived has run since
 *        compute one chunk, push its finished pages to decode, emit CHUNK
 *        after the last chunk: sample the first token, complete the transfer with it, emit DONE
 *  a cancel for a QUEUED job removes it from the queue at once (no engine work ever happens for it)
 *  pages are freed only after the send session is RELEASED: no write may still be reading them
 * </pre>
 *
 * <p>Every engine call happens on the {@link EngineLoop} thread. Cancels arrive on any thread (Netty, Kafka
 * consumer) through the registry's abort handler, which only records the request and wakes the loop.
 */
public final class PrefillScheduler implements Drainable, AutoCloseable {

    /** Bounded by the transfer lease: an aborted session releases within it even if its peer is silent. */
    private volatile boolean drained;

    private static final Logger log = LoggerFactory.getLogger(PrefillScheduler.class);

    private final InferenceEngine engine;
    private final KvPagePool pool;
    private final TransferAgent agent;
    private final KvRegion poolRegion;
    private final CancellationRegistry registry;
    private final PrefillProperties properties;
    private final EngineLoop loop;
    private final LinkedBlockingDeque<PrefillJob> queue;
    private final List<PrefillJob> running = new ArrayList<>();
    private int nextRunning;
    private volatile boolean accepting = true;

    private final AtomicLong chunksComputed = new AtomicLong();
    private final AtomicLong chunksAfterCancel = new AtomicLong();
    private final AtomicLong aborts = new AtomicLong();
    private final Counter tokensAfterCancel;
    private final Timer cancelToStop;
    private final MeterRegistry meters;
    private final SchedulerJournal journal;

    public PrefillScheduler(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                            CancellationRegistry registry, PrefillProperties properties, MeterRegistry meters,
                            SchedulerJournal journal) {
        this(engine, agent, poolRegion, registry, properties, meters, journal, false);
    }

    /**
     * @param manualLoop true for a loop without a thread that the caller steps through {@link #engineLoop()}
     *                   (in-process scheduler tests); production passes false
     */
    public PrefillScheduler(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                            CancellationRegistry registry, PrefillProperties properties, MeterRegistry meters,
                            SchedulerJournal journal, boolean manualLoop) {
        this.journal = journal;
        this.engine = engine;
        this.pool = engine.pagePool();
        this.agent = agent;
        this.poolRegion = poolRegion;
        this.registry = registry;
        this.properties = properties;
        this.meters = meters;
        this.queue = new LinkedBlockingDeque<>(properties.queueCapacity());
        this.loop = manualLoop ? EngineLoop.manual("prefill-engine", this::step) : new EngineLoop("prefill-engine", this::step);
        Gauge.builder("ripcord.prefill.queue", queue, LinkedBlockingDeque::size)
                .description("prompts waiting for a running slot").register(meters);
        Gauge.builder("ripcord.prefill.running", this, s -> s.runningCount)
                .description("prompts in chunked prefill").register(meters);
        Gauge.builder("ripcord.kv.pages.live", pool, KvPagePool::pagesLive)
                .description("KV pages allocated from the engine's pool").register(meters);
        Counter.builder("ripcord.prefill.chunks").description("prefill chunks computed")
                .register(meters);
        Counter.builder("ripcord.prefill.chunks.after.cancel")
                .description("chunks that finished computing after their request's cancel was observed")
                .register(meters);
        this.tokensAfterCancel = Counter.builder("ripcord.prefill.tokens.after.cancel")
                .description("prompt tokens computed after their request's cancel was observed").register(meters);
        this.cancelToStop = Timer.builder("ripcord.cancel.abort.latency").tag("service", "prefill")
                .description("cancel observed by this worker -> its work stopped at a safe point")
                .publishPercentileHistogram().register(meters);
        loop.start();
    }

    private volatile int runningCount;

    // ------------------------------------------------------------------------------------------ admission

    /**
     * Admits a prompt: registers it, starts connecting its transfer session and queues it.
     *
     * @throws QueueFullException when the queue is full. Checked first, before anything is registered or
     *         connected, so decode's receive session is untouched and the gateway may retry elsewhere; only when
     *         concurrent admissions fill the last slot between that check and the enqueue has the session been
     *         connected, and it is then aborted.
     * @throws dev.ripcord.cancel.DuplicateRegistrationException when the ID is already live here
     * @throws IllegalStateException when shutting down
     */
    public PrefillJob submit(PrefillRequest request) {
        if (!accepting) {
            throw new QueueFullException("prefill worker is shutting down");
        }
        if (queue.size() >= properties.queueCapacity()) {
            throw new QueueFullException("prefill queue is full (" + properties.queueCapacity() + ")");
        }
        ReceiveDescriptor descriptor = ReceiveDescriptor.parse(request.transfer());
        PrefillJob job = new PrefillJob(request.requestId(), request.tokens(), descriptor);
        job.events.emitOn(loop);
        SamplingParams sampling = new SamplingParams((float) request.sampling().temperature(),
                (float) request.sampling().topP(), request.sampling().seed());
        job.sampling = sampling;
        // Register before the engine loop can see the job, so that every path that ends it finds its
        // registration. A tombstone (a cancel that arrived first) aborts it right here, before any work.
        job.registration = registry.register(job.requestId, (id, reason, source) -> cancel(job, reason, source));
        if (job.state() == PrefillJob.State.CANCELLED) {
            // The abort handler has already recorded and counted the abort (CANCELLED_AT_ADMISSION for a tombstone).
            job.registration.complete();
            return job;
        }
        // Connect now, not when the prompt starts: decode's receive session must see its sender attach within the
        // attach timeout however long the prompt waits in this queue. connect() never blocks.
        try {
            job.send = agent.connect(job.descriptor);
        } catch (RuntimeException e) {
            job.moveTo(PrefillJob.State.QUEUED, PrefillJob.State.FAILED);
            job.registration.complete();
            throw new IllegalArgumentException("cannot connect to the KV receiver: " + e.getMessage(), e);
        }
        if (!queue.offerLast(job)) {
            job.moveTo(PrefillJob.State.QUEUED, PrefillJob.State.FAILED);
            job.send.abort("prefill queue is full");
            job.registration.complete();
            throw new QueueFullException("prefill queue is full (" + properties.queueCapacity() + ")");
        }
        journal.record(job.requestId, "QUEUED", queue.size() - 1 + runningCount);
        job.emit(PrefillEvent.queued(queue.size() - 1 + runningCount));
        if (job.state() == PrefillJob.State.CANCELLED) {
            // A cancel raced with the assignments above and may have missed the registration or the session.
            job.send.abort("cancelled: " + job.cancelRequest().reason());
            job.registration.complete();
        }
        loop.wakeUp();
        return job;
    }

    /** The registry's abort handler: quick and non-blocking, on whatever thread delivered the cancel. */
    private void cancel(PrefillJob job, CancelReason reason, CancelSource source) {
        if (!job.requestCancel(reason, source)) {
            return;
        }
        journal.record(job.requestId, "CANCEL_OBSERVED", reason + " via " + source);
        RequestLogging.with(job.requestId, () -> {
            if (job.moveTo(PrefillJob.State.QUEUED, PrefillJob.State.CANCELLED)) {
                // A tombstone is delivered inside registry.register(), before submit() has queued the job: that is
                // an abort at admission, and it is recorded once, as such (not also as a removal from the queue).
                boolean atAdmission = source == CancelSource.TOMBSTONE;
                queue.remove(job);
                if (job.send != null) {
                    job.send.abort("cancelled while queued: " + reason + " via " + source);
                }
                journal.record(job.requestId, atAdmission ? "CANCELLED_AT_ADMISSION" : "REMOVED_FROM_QUEUE", reason);
                log.info("requestId={} cancelled {} ({} via {}): no prefill work was done", job.requestId,
                        atAdmission ? "at admission" : "while queued", reason, source);
                count("queued", source);
                aborts.incrementAndGet();
                job.emit(PrefillEvent.error("cancelled: " + reason));
                job.end();
                completeRegistration(job);
            } else {
                log.info("requestId={} cancel observed ({} via {}); prefill stops at the next chunk boundary",
                        job.requestId, reason, source);
                loop.wakeUp();
            }
        });
    }

    // ------------------------------------------------------------------------------------------ engine loop

    /** One unit of work on the engine loop: admit, then one chunk of one running job. */
    private boolean step() {
        admit();
        if (running.isEmpty()) {
            return false;
        }
        nextRunning = nextRunning % running.size();
        PrefillJob job = running.get(nextRunning);
        nextRunning++;
        RequestLogging.with(job.requestId, () -> {
            // ── CANCEL CHECK POINT: between chunks, the safe point of chunked prefill. ──
            if (job.isCancelRequested()) {
                stopCancelled(job);
            } else {
                computeChunk(job);
            }
        });
        return true;
    }

    private void admit() {
        while (running.size() < properties.maxRunning()) {
            PrefillJob job = queue.peekFirst();
            if (job == null) {
                return;
            }
            if (!job.moveTo(PrefillJob.State.QUEUED, PrefillJob.State.RUNNING)) {
                queue.remove(job); // cancelled meanwhile; its canceller finished it
                continue;
            }
            queue.remove(job);
            RequestLogging.with(job.requestId, () -> start(job));
        }
        runningCount = running.size();
    }

    private void start(PrefillJob job) {
        try {
            job.sequence = engine.newSequence(job.sampling);
        } catch (RuntimeException e) {
            fail(job, "cannot start prefill: " + e.getMessage(), e);
            return;
        }
        running.add(job);
        journal.record(job.requestId, "STARTED", job.tokens.length + " tokens");
        log.info("requestId={} prefill started: {} tokens in chunks of {}", job.requestId, job.tokens.length,
                properties.chunkTokens());
        job.emit(PrefillEvent.started());
    }

    private void computeChunk(PrefillJob job) {
        int from = job.tokensDone;
        int to = Math.min(from + properties.chunkTokens(), job.tokens.length);
        try {
            engine.prefill(job.sequence, job.tokens, from, to);
        } catch (RuntimeException e) {
            fail(job, "prefill failed: " + e.getMessage(), e);
            return;
        }
        job.tokensDone = to;
        job.chunks++;
        journal.record(job.requestId, "CHUNK", job.chunks - 1);
        chunksComputed.incrementAndGet();
        meters.counter("ripcord.prefill.chunks").increment();
        if (job.isCancelRequested()) {
            // The cancel arrived while this chunk was computing: the one chunk the contract allows.
            chunksAfterCancel.incrementAndGet();
            meters.counter("ripcord.prefill.chunks.after.cancel").increment();
            tokensAfterCancel.increment(to - from);
        }
        boolean last = to == job.tokens.length;
        pushFinishedPages(job, last);
        job.emit(PrefillEvent.chunk(job.chunks - 1, to));
        if (last) {
            finish(job);
        }
    }

    /**
     * Sends the pages no later chunk will write: every full page, and the last partial page after the last chunk.
     * A page is never sent twice and never modified while a send may be reading it.
     */
    private void pushFinishedPages(PrefillJob job, boolean last) {
        int pageTokens = pool.layout().pageTokens();
        int finished = last ? pool.layout().pagesFor(job.tokensDone) : job.tokensDone / pageTokens;
        long pageBytes = pool.pageBytes();
        for (int p = job.pagesSent; p < finished; p++) {
            long src = pool.offsetOf(job.sequence.poolPage(p));
            job.sends.add(job.send.send(poolRegion, src, pageBytes, p * pageBytes));
        }
        job.pagesSent = Math.max(job.pagesSent, finished);
    }

    private void finish(PrefillJob job) {
        int first;
        try {
            first = engine.sample(job.sequence);
        } catch (RuntimeException e) {
            fail(job, "sampling failed: " + e.getMessage(), e);
            return;
        }
        if (!job.moveTo(PrefillJob.State.RUNNING, PrefillJob.State.DONE)) {
            return;
        }
        journal.record(job.requestId, "DONE", "first token " + first);
        running.remove(job);
        runningCount = running.size();
        CompletableFuture.allOf(job.sends.toArray(CompletableFuture[]::new))
                .thenCompose(v -> job.send.complete(TransferMetadata.encodeFirstToken(first)))
                .whenComplete((v, error) -> RequestLogging.with(job.requestId, () -> {
                    if (error == null) {
                        log.info("requestId={} prefill done in {} chunks; KV delivered, first token {}",
                                job.requestId, job.chunks, first);
                        job.emit(PrefillEvent.done(first));
                    } else {
                        log.warn("requestId={} KV transfer failed after prefill: {}", job.requestId,
                                error.toString());
                        job.emit(PrefillEvent.error("KV transfer failed: " + rootMessage(error)));
                    }
                    job.end();
                    completeRegistration(job);
                }));
        releaseWhenDrained(job);
    }

    private void stopCancelled(PrefillJob job) {
        if (!job.moveTo(PrefillJob.State.RUNNING, PrefillJob.State.CANCELLED)) {
            return;
        }
        JobCancel.Request cancel = job.cancelRequest();
        running.remove(job);
        runningCount = running.size();
        journal.record(job.requestId, "STOPPED", job.tokensDone + "/" + job.tokens.length + " tokens");
        job.send.abort("cancelled: " + cancel.reason() + " via " + cancel.source());
        cancelToStop.record(System.nanoTime() - cancel.observedNanos(), TimeUnit.NANOSECONDS);
        count("prefill", cancel.source());
        aborts.incrementAndGet();
        log.info("requestId={} prefill stopped at chunk boundary after {} of {} tokens ({} via {})",
                job.requestId, job.tokensDone, job.tokens.length, cancel.reason(), cancel.source());
        job.emit(PrefillEvent.error("cancelled: " + cancel.reason()));
        job.end();
        completeRegistration(job);
        releaseWhenDrained(job);
    }

    private void fail(PrefillJob job, String message, Exception e) {
        PrefillJob.State from = job.state();
        if (from.isTerminal() || !job.moveTo(from, PrefillJob.State.FAILED)) {
            return;
        }
        journal.record(job.requestId, "FAILED", message);
        log.warn("requestId={} {}", job.requestId, message, e);
        running.remove(job);
        runningCount = running.size();
        if (job.send != null) {
            job.send.abort(message);
        }
        job.emit(PrefillEvent.error(message));
        job.end();
        completeRegistration(job);
        releaseWhenDrained(job);
    }

    /** Frees the job's pages on the engine loop once its send session is RELEASED (or never existed). */
    private void releaseWhenDrained(PrefillJob job) {
        Sequence seq = job.sequence;
        if (seq == null) {
            return;
        }
        CompletableFuture<?> drained = job.send == null
                ? CompletableFuture.completedFuture(null) : job.send.released();
        drained.whenComplete((state, e) -> loop.execute(() -> {
            engine.free(seq);
            journal.record(job.requestId, "FREED", "");
        }));
    }

    private void completeRegistration(PrefillJob job) {
        if (job.registration != null) {
            job.registration.complete();
        }
    }

    private void count(String phase, CancelSource source) {
        meters.counter("ripcord.cancellations", "service", "prefill", "phase", phase,
                "path", source.name().toLowerCase()).increment();
    }

    private static String rootMessage(Throwable t) {
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return String.valueOf(t.getMessage());
    }

    // ------------------------------------------------------------------------------------------ state

    /** The loop every engine call runs on; tests step a manual one themselves. */
    public EngineLoop engineLoop() {
        return loop;
    }

    public int queued() {
        return queue.size();
    }

    public int running() {
        return runningCount;
    }

    public long chunksComputed() {
        return chunksComputed.get();
    }

    public long chunksAfterCancel() {
        return chunksAfterCancel.get();
    }

    public long aborts() {
        return aborts.get();
    }

    /** Stops admitting; later submissions are refused with 503. */
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
        Drainable.drainInOrder(this::stopAccepting, () -> runningCount == 0 && queue.isEmpty(), grace, registry, pool::pagesLive,
                log);
        drained = true;
    }

    /** Drains without a grace period if nobody drained first, then stops the engine loop. */
    @Override
    public void close() {
        drain(Duration.ZERO);
        loop.close(Duration.ofSeconds(10));
    }

    /** The queue is full or the worker is draining: the gateway answers 503 with {@code Retry-After}. */
    public static final class QueueFullException extends RuntimeException {
        QueueFullException(String message) {
            super(message, null, false, false);
        }
    }
}
