package dev.ripcord.worker;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * One request's KV transfer as its sender saw it: the bytes the receiver acknowledged, and the transfer's wall time,
 * the time during which at least one write was in flight (from its {@code send} call to the receiver's
 * acknowledgement that the bytes landed). The gaps in which the engine computed the next chunk and nothing was in
 * flight are not counted, so bytes over time is what the transport delivered while it was busy: with TCP the
 * socket's rate, with shared memory the copy into the receiver's pages plus the acknowledgement on the control
 * connection. Thread-safe: writes are posted on the engine loop and acknowledged on transport threads.
 */
public final class TransferClock {

    private int inFlight; // guarded by this
    private long busySince; // guarded by this
    private long busyNanos; // guarded by this
    private long bytes; // guarded by this

    /**
     * Posts one write of {@code length} bytes through {@code send} and times it until its future completes; a write
     * that fails (the transfer aborted) adds its time but not its bytes.
     */
    public CompletableFuture<Void> time(long length, Supplier<CompletableFuture<Void>> send) {
        begin();
        CompletableFuture<Void> acked;
        try {
            acked = send.get();
        } catch (RuntimeException | Error e) {
            end(0);
            throw e;
        }
        acked.whenComplete((v, e) -> end(e == null ? length : 0));
        return acked;
    }

    private synchronized void begin() {
        if (inFlight++ == 0) {
            busySince = System.nanoTime();
        }
    }

    private synchronized void end(long landed) {
        bytes += landed;
        if (--inFlight == 0) {
            busyNanos += System.nanoTime() - busySince;
        }
    }

    /** Bytes acknowledged so far. */
    public synchronized long bytes() {
        return bytes;
    }

    /** Wall time with at least one write in flight, so far (a write still in flight counts up to now). */
    public synchronized long busyNanos() {
        return inFlight == 0 ? busyNanos : busyNanos + System.nanoTime() - busySince;
    }

    /** Bytes per second while busy; 0 before anything landed. */
    public synchronized double bytesPerSecond() {
        long nanos = busyNanos();
        return nanos == 0 ? 0 : bytes * 1e9 / nanos;
    }

    @Override
    public synchronized String toString() {
        return "%d bytes in %d µs".formatted(bytes, busyNanos() / 1000);
    }
}
