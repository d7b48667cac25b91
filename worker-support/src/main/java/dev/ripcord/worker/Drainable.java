package dev.ripcord.worker;

import java.time.Duration;

/** A worker component that holds requests and must let them go before the process exits. */
public interface Drainable {

    /**
     * Stops admitting, lets work in flight finish for up to {@code grace}, then aborts what is left (reason
     * {@code SHUTDOWN}) and waits, bounded, until its KV pages and transfers are released. Returns when done.
     */
    void drain(Duration grace);

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
