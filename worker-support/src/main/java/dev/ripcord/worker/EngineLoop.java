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
 * is a safe point where cancellation takes effect, and so is every layer boundary inside a step: a cancel handler
 * (on whatever thread) requests the engine's stop on the job's sequence, and the step in progress stops at its next
 * layer boundary ({@code Sequence.requestStop()}, {@code ComputeStoppedException}).
 *
 * <p>Tasks run before each step, in submission order. When a step reports no work and no task is waiting, the
 * thread parks until {@link #wakeUp()} or a new task.
 *
 * <p>A {@linkplain #manual manual} loop has no thread: tasks queue up and nothing runs until the owner calls
 * {@link #runOnce()} or {@link #runUntilIdle()}. In-process scheduler tests use it to step a worker themselves, so
 * that they can put a cancel exactly between two steps; production code never creates one.
 */
public final class EngineLoop implements AutoCloseable {

    /** How a loop runs: on a thread of its own (services), or stepped by its owner (in-process tests). */
    public enum Mode { THREAD, MANUAL }

    private static final Logger log = LoggerFactory.getLogger(EngineLoop.class);
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final BooleanSupplier step;
    private final Thread thread;
    private final String name;
    /** Manual mode: the thread inside {@link #runOnce()}, or null. */
    private volatile Thread pumping;
    private volatile boolean closed;

    /**
     * @param step one unit of work; returns whether it did any (false parks the loop until woken)
     */
    public EngineLoop(String name, BooleanSupplier step) {
        this(name, step, false);
    }

    private EngineLoop(String name, BooleanSupplier step, boolean manual) {
        this.step = step;
        this.name = name;
        this.thread = manual ? null : Thread.ofPlatform().name(name).daemon(false).unstarted(this::run);
    }

    /**
     * A loop without a thread, stepped by its owner ({@link #runOnce()}, {@link #runUntilIdle()}): for tests that
     * need to place an event exactly between two steps.
     */
    public static EngineLoop manual(String name, BooleanSupplier step) {
        return new EngineLoop(name, step, true);
    }

    /** Starts the loop thread; a manual loop has none, and this does nothing. */
    public void start() {
        if (thread != null) {
            thread.start();
        }
    }

    /** Whether this loop is stepped by its owner rather than by a thread of its own. */
    public boolean isManual() {
        return thread == null;
    }

    /**
     * Manual loops only: runs the waiting tasks, then one step. Returns whether anything ran.
     *
     * @throws IllegalStateException on a threaded loop
     */
    public boolean runOnce() {
        if (thread != null) {
            throw new IllegalStateException("engine loop " + name + " has its own thread");
        }
        pumping = Thread.currentThread();
        try {
            boolean worked = drainTasks();
            if (!closed) {
                try {
                    worked |= step.getAsBoolean();
                } catch (RuntimeException e) {
                    log.error("engine loop {} step failed", name, e);
                    throw e;
                }
            }
            return worked;
        } finally {
            pumping = null;
        }
    }

    /**
     * Manual loops only: {@link #runOnce()} until nothing is left to do; returns how many rounds did work.
     *
     * @throws IllegalStateException after {@code maxRounds} busy rounds (a step that never settles)
     */
    public int runUntilIdle(int maxRounds) {
        int rounds = 0;
        while (runOnce()) {
            if (++rounds >= maxRounds) {
                throw new IllegalStateException("engine loop " + name + " still busy after " + maxRounds + " rounds");
            }
        }
        return rounds;
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
            throw new IllegalStateException("engine loop " + name + " is closed");
        }
        tasks.add(task);
        if (thread != null) {
            LockSupport.unpark(thread);
        }
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

    /** Tasks queued and not yet started (a snapshot; counting walks the queue). */
    public int pending() {
        return tasks.size();
    }

    /** Makes a parked loop run its step again (new work arrived through a path other than a task). */
    public void wakeUp() {
        if (thread != null) {
            LockSupport.unpark(thread);
        }
    }

    /** Whether the caller is the loop thread (for a manual loop: the thread inside {@link #runOnce()}). */
    public boolean inLoop() {
        return Thread.currentThread() == (thread != null ? thread : pumping);
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
                log.error("engine loop {} step failed", name, t);
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
                log.error("engine loop {} task failed", name, t);
            }
        }
        return any;
    }

    /** Stops after the waiting tasks have run; waits up to {@code timeout} for the thread. */
    public void close(Duration timeout) {
        closed = true;
        if (thread == null) {
            drainTasks();
            return;
        }
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
