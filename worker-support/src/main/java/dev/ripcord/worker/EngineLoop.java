package dev.ripcord.worker;

import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread that touches a worker's inference engine.
 *
 * <p>Design note: the engine is used by one thread at a time and never locks while computing. Rather than lock
 * around it, every engine interaction of a worker (admission, computing a chunk or a decode step, freeing pages
 * once a transfer has released them) runs on this thread: other threads hand it tasks with {@link #call} or
 * {@link #execute}, which never block the caller (callers are Netty event loops and Kafka consumer threads). Between
 * tasks the loop runs the worker's {@code step} (one prefill chunk, or one decode step); the gap between two steps
 * is the safe point where cancellation takes effect.
 *
 * <p>Tasks run before each step, in submission order. When a step reports no work and no task is waiting, the
 * thread parks until {@link #wakeUp()} or a new task.
 */
public final class EngineLoop implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EngineLoop.class);
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final BooleanSupplier step;
    private final Thread thread;
    private volatile boolean closed;

    /**
     * @param step one unit of work; returns whether it did any (false parks the loop until woken)
     */
    public EngineLoop(String name, BooleanSupplier step) {
        this.step = step;
        this.thread = Thread.ofPlatform().name(name).daemon(false).unstarted(this::run);
    }

    public void start() {
        thread.start();
    }

    /** Runs {@code task} on the loop thread; the future completes there. */
    public <T> CompletableFuture<T> call(Supplier<T> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        execute(() -> {
            try {
                result.complete(task.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        return result;
    }

    /** Runs {@code task} on the loop thread, after the tasks already waiting. */
    public void execute(Runnable task) {
        if (closed) {
            throw new IllegalStateException("engine loop " + thread.getName() + " is closed");
        }
        tasks.add(task);
        LockSupport.unpark(thread);
    }

    /**
     * Queues {@code task} to run on the loop thread, after the tasks already waiting. Used to keep every emission of a
     * request's event stream on this one thread: a Reactor sink fed from several threads must serialize them,
     * and a thread descheduled mid-emission on a loaded machine can make another emitter give up.
     */
    public void runInLoop(Runnable task) {
        // Queued even from the loop thread itself: an emission can re-enter (a subscriber cancelling inside
        // onNext runs the cancel path on this thread), and a re-entrant emission into the same sink fails.
        if (closed) {
            task.run();
        } else {
            execute(task);
        }
    }

    /** Makes a parked loop run its step again (new work arrived through a path other than a task). */
    public void wakeUp() {
        LockSupport.unpark(thread);
    }

    /** Whether the caller is the loop thread. */
    public boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    private void run() {
        while (!closed || !tasks.isEmpty()) {
            boolean worked = drainTasks();
            if (closed) {
                continue;
            }
            try {
                worked |= step.getAsBoolean();
            } catch (Throwable t) {
                log.error("engine loop {} step failed", thread.getName(), t);
            }
            if (!worked && tasks.isEmpty()) {
                LockSupport.parkNanos(this, IDLE_PARK_NANOS);
            }
        }
    }

    private boolean drainTasks() {
        boolean any = false;
        Runnable task;
        while ((task = tasks.poll()) != null) {
            any = true;
            try {
                task.run();
            } catch (Throwable t) {
                log.error("engine loop {} task failed", thread.getName(), t);
            }
        }
        return any;
    }

    /** Stops after the waiting tasks have run; waits up to {@code timeout} for the thread. */
    public void close(Duration timeout) {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(10));
    }
}
