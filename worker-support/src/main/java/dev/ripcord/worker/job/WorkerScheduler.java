package dev.ripcord.worker.job;

import java.time.Duration;
import java.util.function.Function;

import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.worker.Drainable;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.WorkerContext;

/**
 * What both workers' schedulers share around their own work: the context, the {@link JobLifecycle} and its engine
 * loop, admission on/off, and the drain. A scheduler adds its step (one unit of work on the loop), says when it is
 * idle, and starts the loop at the end of its constructor ({@link #startLoop()}), once its own fields are set.
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
    private volatile boolean accepting = true;

    protected WorkerScheduler(String service, WorkerContext context, Function<Cancelled, E> cancelledEvent,
                              Function<Failed, E> failedEvent) {
        this.context = context;
        this.engine = context.engine();
        this.pool = engine.pagePool();
        this.lifecycle = new JobLifecycle<>(service, context, this::step, cancelledEvent, failedEvent);
        this.loop = lifecycle.loop();
    }

    /** One unit of work on the engine loop; returns whether it did any. */
    protected abstract boolean step();

    /** No job admitted and not yet ended is left in the scheduler's hands. */
    protected abstract boolean idle();

    protected final void startLoop() {
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
