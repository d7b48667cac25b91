package dev.ripcord.gateway.auth;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;

/**
 * Bounds the completions each key has in flight. A {@link Permit} is taken when a completion is admitted and
 * released exactly once when its response ends, whichever way it ends (finished, failed, client gone): the
 * counts {@link #acquired()} and {@link #released()} must meet whenever nothing is in flight.
 *
 * <p>Non-blocking: {@link #tryAcquire} either takes a permit at once or says no.
 */
final class StreamPermits {

    private final int max;
    private final MeterRegistry meters;
    private final ConcurrentHashMap<String, AtomicInteger> active = new ConcurrentHashMap<>();
    private final LongAdder acquired = new LongAdder();
    private final LongAdder released = new LongAdder();

    StreamPermits(int max, MeterRegistry meters) {
        this.max = max;
        this.meters = meters;
    }

    /** A permit for one more completion of {@code identity}, or null if it already has {@code max} in flight. */
    @Nullable Permit tryAcquire(String identity) {
        AtomicInteger count = active.computeIfAbsent(identity, this::register);
        while (true) {
            int now = count.get();
            if (now >= max) {
                return null;
            }
            if (count.compareAndSet(now, now + 1)) {
                acquired.increment();
                return new Permit(count);
            }
        }
    }

    private AtomicInteger register(String identity) {
        AtomicInteger count = new AtomicInteger();
        // Identities are the configured keys' (or "anonymous"): a bounded set, so one gauge each is fine.
        Gauge.builder("ripcord.gateway.auth.streams.active", count, AtomicInteger::get)
                .description("completions in flight per API key identity")
                .tag("apiKey", identity)
                .register(meters);
        return count;
    }

    int max() {
        return max;
    }

    /** Completions of {@code identity} in flight now. */
    int active(String identity) {
        AtomicInteger count = active.get(identity);
        return count == null ? 0 : count.get();
    }

    long acquired() {
        return acquired.sum();
    }

    long released() {
        return released.sum();
    }

    /** One admitted completion's place; {@link #release()} is idempotent. */
    final class Permit {
        private final AtomicInteger count;
        private final AtomicBoolean done = new AtomicBoolean();

        private Permit(AtomicInteger count) {
            this.count = count;
        }

        /** Gives the place back; only the first call does anything. */
        void release() {
            if (done.compareAndSet(false, true)) {
                count.decrementAndGet();
                released.increment();
            }
        }
    }
}
