package dev.ripcord.worker.job;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;

import dev.ripcord.cancel.Registration;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.JobEvents;
import reactor.core.publisher.Flux;

/**
 * What every job of a worker has, whatever the worker: its request ID, its {@link JobState}, the first cancel that
 * reached it, its event stream, its registration, and the once-only flags of its ending (stream ended, abort
 * counted, pages freed). A worker's job class adds only what its work needs. State, cancel and flags are safe from
 * any thread; what subclasses add is touched only on the worker's engine loop unless they say otherwise.
 *
 * @param <E> the worker's event type
 */
public abstract class WorkerJob<E> {

    private final String requestId;
    private final AtomicReference<JobState> state = new AtomicReference<>(JobState.WAITING);
    private final JobCancel cancel = new JobCancel();
    final JobEvents<E> events = new JobEvents<>();
    volatile Registration registration;
    private final AtomicBoolean ended = new AtomicBoolean();
    private final AtomicBoolean freed = new AtomicBoolean();
    /** The transfer whose release lets the pages go, and how to let them go; set by the worker once it has both. */
    volatile CompletableFuture<?> transferReleased;
    volatile IntSupplier freePages;
    /** {@link System#nanoTime()} when the worker admitted the job: the start of its queue time. */
    private final long admittedNanos = System.nanoTime();

    protected WorkerJob(String requestId) {
        this.requestId = requestId;
    }

    /** {@link System#nanoTime()} when the job was admitted (constructed by its scheduler's admission). */
    public final long admittedNanos() {
        return admittedNanos;
    }

    public final String requestId() {
        return requestId;
    }

    public final JobState state() {
        return state.get();
    }

    /** The job's events for the gateway, ending with the terminal event (if any), then completion. */
    public final Flux<E> events() {
        return events.flux();
    }

    /** The first cancel that reached the job, or null. */
    public final JobCancel.Request cancelRequest() {
        return cancel.request();
    }

    public final boolean isCancelRequested() {
        return cancel.isRequested();
    }

    /**
     * Emits one of the job's non-terminal events (the terminal one is emitted by {@link JobLifecycle} when it ends
     * the job). On the engine loop, queued, like every emission.
     */
    public final void emit(E event) {
        events.emit(event);
    }

    /** Performs a checked transition; false if another thread moved the job first (e.g. a cancel won). */
    public final boolean moveTo(JobState expected, JobState next) {
        return state.compareAndSet(expected, expected.to(next));
    }

    final boolean requestCancel(dev.ripcord.protocol.CancelReason reason, dev.ripcord.protocol.CancelSource source) {
        return cancel.request(reason, source);
    }

    final boolean claimAbortCount() {
        return cancel.claimAbortCount();
    }

    final boolean claimEnd() {
        return ended.compareAndSet(false, true);
    }

    final boolean isEnded() {
        return ended.get();
    }

    final boolean claimFree() {
        return freed.compareAndSet(false, true);
    }

    /** The free claimed by {@link #claimFree} threw: the pages are still held, and it may be claimed again. */
    final void unclaimFree() {
        freed.set(false);
    }

    /** Whether the job's pages went back to the pool (or it never had any and is over). */
    public final boolean isFreed() {
        return freed.get();
    }
}
