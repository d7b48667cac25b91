package dev.ripcord.kv.session;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls receive sessions whose drain waits on a shared-memory writer (nothing else can keep a terminal session
 * from releasing, and a writer in another process sends no event when it leaves the fence bracket or dies), until
 * each one releases. One periodic task for all of them, started on the first watch and stopped when none is left.
 * A session still waiting after a lease is logged once as quarantined: its writer is alive inside the bracket,
 * and its pages stay pinned until it leaves or dies (releasing earlier could corrupt the next request).
 */
public final class DrainWatchdog {
    private static final Logger log = LoggerFactory.getLogger(DrainWatchdog.class);
    private static final long WARNED = Long.MAX_VALUE / 2;

    /** A session waiting to drain, as the watchdog sees it. */
    public interface Drain {
        /** Looks again and releases the session if it is drained now. */
        void recheck();

        /** True once the session's release has been claimed: the watchdog forgets it. */
        boolean isReleaseClaimed();

        String requestId();

        long sessionId();
    }

    private final Function<Runnable, ScheduledFuture<?>> scheduler;
    private final long leaseNanos;
    private final LongSupplier nanoTime;
    // guarded by itself
    private final Map<Drain, Long> draining = new HashMap<>();
    private ScheduledFuture<?> task; // guarded by draining

    /**
     * @param scheduler runs the poll periodically (every millisecond on an event loop); returns null when it no
     *                  longer can (the agent is shutting down, and close releases every session itself)
     * @param nanoTime  the clock the quarantine warning measures the lease with
     */
    public DrainWatchdog(Function<Runnable, ScheduledFuture<?>> scheduler, long leaseNanos, LongSupplier nanoTime) {
        this.scheduler = scheduler;
        this.leaseNanos = leaseNanos;
        this.nanoTime = nanoTime;
    }

    /** Watches {@code d} until its release is claimed. Idempotent. */
    public void watch(Drain d) {
        synchronized (draining) {
            draining.putIfAbsent(d, nanoTime.getAsLong());
            if (task == null) {
                task = scheduler.apply(this::poll);
            }
        }
    }

    /** Sessions watched now. */
    int watching() {
        synchronized (draining) {
            return draining.size();
        }
    }

    /** Sessions watched now that are quarantined: still waiting on a live writer after the lease. */
    public int quarantined() {
        synchronized (draining) {
            return (int) draining.values().stream().filter(since -> since == WARNED).count();
        }
    }

    /** True while the periodic poll is scheduled. */
    boolean isRunning() {
        synchronized (draining) {
            return task != null;
        }
    }

    /** One round: rechecks every watched session, warns once about each quarantined one, forgets released ones. */
    void poll() {
        List<Map.Entry<Drain, Long>> snapshot;
        synchronized (draining) {
            snapshot = new ArrayList<>(draining.entrySet());
        }
        for (Map.Entry<Drain, Long> e : snapshot) {
            Drain d = e.getKey();
            d.recheck();
            if (!d.isReleaseClaimed() && nanoTime.getAsLong() - e.getValue() > leaseNanos) {
                log.warn("request={} session={} quarantined: a shared-memory writer has been inside the fence for "
                        + "longer than the lease and its process is alive; its pages stay pinned until it leaves or "
                        + "dies", d.requestId(), d.sessionId());
                synchronized (draining) {
                    draining.put(d, WARNED); // warn once
                }
            }
        }
        synchronized (draining) {
            draining.keySet().removeIf(Drain::isReleaseClaimed);
            if (draining.isEmpty() && task != null) {
                task.cancel(false);
                task = null;
            }
        }
    }
}
