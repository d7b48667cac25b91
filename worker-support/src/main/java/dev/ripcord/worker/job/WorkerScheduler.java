package dev.ripcord.worker.job;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.worker.Drainable;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;

/**
 * What both workers' schedulers share around their own work: the context, the {@link JobLifecycle} and its engine
 * loop, admission on/off, and the drain. A scheduler adds its step (one unit of work on the loop), says when it is
 * idle, and starts the loop at the end of its constructor ({@link #startLoop()}), once its own fields are set.
 *
 * <p>Metrics every worker has, with vLLM's names and meanings (docs/metrics.md): {@code ripcord.num.requests.waiting}
 * and {@code ripcord.num.requests.running} read {@link #waiting()} and {@link #running()} (the gauges the Gateway API
 * Inference Extension's endpoint picker scrapes), and {@code ripcord.request.queue.time} is the time a job spent in
 * the state {@link #waiting()} counts, recorded by the worker through {@link #recordQueueTime} when it leaves it.
 * Recording is a few atomic adds on the engine loop; nothing blocks.
 *
 * @param <J> the worker's job type
 * @param <E> the worker's event type
 */
public abstract class WorkerScheduler<J extends WorkerJob<E>, E> implements Drainable, AutoCloseable {

    protected final WorkerContext context;
    protected final InferenceEngine engine;
    protected final KvPagePool pool;
    protected final JobLifecycle<J, E> lifecycle;
    protected final EngineLoop loop;
    private final Timer queueTime;
    private volatile boolean accepting = true;

    protected WorkerScheduler(String service, WorkerContext context, Function<Cancelled, E> cancelledEvent,
                              Function<Failed, E> failedEvent) {
        this.context = context;
        this.engine = context.engine();
        this.pool = engine.pagePool();
        this.lifecycle = new JobLifecycle<>(service, context, this::step, cancelledEvent, failedEvent);
        this.loop = lifecycle.loop();
        this.queueTime = Timer.builder("ripcord.request.queue.time")
                .description("admitted -> work started (prefill: queued -> running; decode: reserved -> KV landed)")
                .serviceLevelObjectives(LatencyBuckets.requestLatency())
                .register(context.meters());
    }

    /** Records that {@code job} leaves the waiting state now: its queue time. */
    protected final void recordQueueTime(J job) {
        queueTime.record(System.nanoTime() - job.admittedNanos(), TimeUnit.NANOSECONDS);
    }

    /** One unit of work on the engine loop; returns whether it did any. */
    protected abstract boolean step();

    /** No job admitted and not yet ended is left in the scheduler's hands. */
    protected abstract boolean idle();

    /** Registers the running/waiting gauges (they read the subclass's fields, set by now) and starts the loop. */
    protected final void startLoop() {
        Gauge.builder("ripcord.num.requests.running", this, WorkerScheduler::running)
                .description("requests being worked on (prefill: in chunked prefill; decode: in the batch)")
                .register(context.meters());
        Gauge.builder("ripcord.num.requests.waiting", this, WorkerScheduler::waiting)
                .description("requests admitted and waiting (prefill: queued; decode: awaiting KV)")
                .register(context.meters());
        loop.start();
    }

    protected final boolean accepting() {
        return accepting;
    }

    /** The loop every engine call runs on; in-process tests step a {@link EngineLoop.Mode#MANUAL} one themselves. */
    public final EngineLoop engineLoop() {
        return loop;
    }

    /** Jobs admitted and waiting for their work to start (prefill: queued; decode: awaiting KV). */
    public abstract int waiting();

    /** Jobs being worked on (prefill: in chunked prefill; decode: in the batch). */
    public abstract int running();

    /** Prefill chunks computed since start; 0 for a worker that computes none. */
    public long chunksComputed() {
        return 0;
    }

    /** Aborts carried out since start: one per cancelled job. */
    public final long aborts() {
        return lifecycle.aborts();
    }

    /** Stops admitting; later submissions are refused with 503. */
    public final void stopAccepting() {
        accepting = false;
    }

    /** See {@link JobLifecycle#drain}. */
    @Override
    public final void drain(Duration grace) {
        lifecycle.drain(grace, this::stopAccepting, this::idle);
    }

    /** Drains without a grace period if nobody drained first, then stops the engine loop. */
    @Override
    public final void close() {
        lifecycle.close(this::stopAccepting, this::idle);
    }
}
