package dev.ripcord.engine.kernel;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A fixed set of worker threads that run one parallel region at a time, the caller taking part as worker 0.
 *
 * <p>Design note: a forward pass is a few dozen short regions (one per matmul group, attention, norm), so the
 * hand-off must be cheap and allocation-free: a region is published with a volatile generation counter, workers
 * spin briefly and then park, and the last worker to finish unparks the caller. No lock is held at any point, in
 * particular not while computing. Work is split by the task itself (a fixed partition or an atomic work counter);
 * results never depend on which worker computes which item.
 *
 * <p>Single caller: {@link #run} must not be invoked concurrently (the engine's contract is one scheduler thread at
 * a time); a concurrent call is detected and rejected.
 */
public final class WorkerPool implements AutoCloseable {

    /** One parallel region; {@code worker} is in {@code [0, workers)}. */
    @FunctionalInterface
    public interface Task {
        void run(int worker, int workers);
    }

    private static final long SPIN_NANOS = 20_000;

    private final int size;
    private final Thread[] threads;
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final AtomicInteger running = new AtomicInteger();
    private volatile Task task;
    private volatile int generation;
    private volatile boolean closed;
    private volatile Thread caller;

    public WorkerPool(int size, String namePrefix) {
        if (size < 1) {
            throw new IllegalArgumentException("a worker pool needs at least one thread, got " + size);
        }
        this.size = size;
        this.threads = new Thread[size - 1];
        for (int i = 1; i < size; i++) {
            int worker = i;
            threads[i - 1] = Thread.ofPlatform().daemon().name(namePrefix + "-" + i).unstarted(() -> loop(worker));
            threads[i - 1].start();
        }
    }

    /** Number of workers including the calling thread. */
    public int size() {
        return size;
    }

    /**
     * Runs {@code region} on every worker and returns when all have finished. The first exception thrown by any
     * worker is rethrown here (wrapped if checked); the others are added as suppressed.
     */
    public void run(Task region) {
        if (closed) {
            throw new IllegalStateException("worker pool is closed");
        }
        if (!running.compareAndSet(0, 1)) {
            throw new IllegalStateException("worker pool used by two threads at once; the engine is single-caller");
        }
        try {
            if (size == 1) {
                region.run(0, 1);
                return;
            }
            caller = Thread.currentThread();
            failure.set(null);
            task = region;
            pending.set(size - 1);
            generation = generation + 1; // publishes task and pending to the workers
            for (Thread t : threads) {
                LockSupport.unpark(t);
            }
            try {
                region.run(0, size);
            } catch (Throwable t) {
                record(t);
            }
            awaitWorkers();
            task = null;
            Throwable t = failure.getAndSet(null);
            if (t != null) {
                if (t instanceof RuntimeException re) {
                    throw re;
                }
                if (t instanceof Error e) {
                    throw e;
                }
                throw new IllegalStateException(t);
            }
        } finally {
            running.set(0);
        }
    }

    private void awaitWorkers() {
        long spinUntil = System.nanoTime() + SPIN_NANOS;
        while (pending.get() != 0) {
            if (System.nanoTime() < spinUntil) {
                Thread.onSpinWait();
            } else {
                LockSupport.park(this);
            }
        }
    }

    private void record(Throwable t) {
        if (!failure.compareAndSet(null, t)) {
            Throwable first = failure.get();
            if (first != null && first != t) {
                first.addSuppressed(t);
            }
        }
    }

    private void loop(int worker) {
        int seen = 0;
        while (true) {
            long spinUntil = System.nanoTime() + SPIN_NANOS;
            int g;
            while ((g = generation) == seen && !closed) {
                if (System.nanoTime() < spinUntil) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this);
                }
            }
            if (closed) {
                return;
            }
            seen = g;
            try {
                task.run(worker, size);
            } catch (Throwable t) {
                record(t);
            }
            if (pending.decrementAndGet() == 0) {
                LockSupport.unpark(caller);
            }
        }
    }

    /** Stops the workers; idempotent. Must not be called while a region runs. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Thread t : threads) {
            LockSupport.unpark(t);
        }
        for (Thread t : threads) {
            try {
                t.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** First index of worker {@code worker}'s share of {@code n} items split into {@code workers} fixed ranges. */
    public static int rangeStart(int n, int worker, int workers) {
        return (int) ((long) n * worker / workers);
    }
}
