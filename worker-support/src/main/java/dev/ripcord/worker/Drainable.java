package dev.ripcord.worker;

import java.time.Duration;

/** A worker component that holds requests and must let them go before the process exits. */
public interface Drainable {

    /**
     * Stops admitting, lets work in flight finish for up to {@code grace}, then aborts what is left (reason
     * {@code SHUTDOWN}) and waits, bounded, until its KV pages and transfers are released. Returns when done.
     */
    void drain(Duration grace);

    /** How long a drain waits, after the grace period, for the KV pages of aborted requests to come back. */
    Duration RELEASE_WAIT = Duration.ofSeconds(10);

    /**
     * The drain both schedulers share, in order: {@code stopAccepting}; wait up to {@code grace} for {@code idle};
     * cancel every live registration ({@code SHUTDOWN}, the same path as any cancel); wait up to
     * {@link #RELEASE_WAIT} for {@code pagesLive} to reach zero. Returns when done; says what it had to do.
     */
    static void drainInOrder(Runnable stopAccepting, java.util.function.BooleanSupplier idle, Duration grace,
                             dev.ripcord.cancel.CancellationRegistry registry,
                             java.util.function.IntSupplier pagesLive, org.slf4j.Logger log) {
        stopAccepting.run();
        if (!awaitCondition(idle, grace)) {
            int n = registry.cancelAll(dev.ripcord.protocol.CancelReason.SHUTDOWN,
                    dev.ripcord.protocol.CancelSource.SHUTDOWN);
            log.info("drain: grace period over, cancelled {} request(s)", n);
        }
        if (!awaitCondition(() -> pagesLive.getAsInt() == 0, RELEASE_WAIT)) {
            log.warn("drain: {} KV pages still live after {}", pagesLive.getAsInt(), RELEASE_WAIT);
        }
    }

    /** Polls {@code condition} every 20 ms until it holds or {@code timeout} passes; returns whether it held. */
    static boolean awaitCondition(java.util.function.BooleanSupplier condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() >= deadline) {
                return false;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return condition.getAsBoolean();
            }
        }
        return true;
    }
}
