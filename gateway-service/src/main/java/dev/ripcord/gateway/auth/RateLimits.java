package dev.ripcord.gateway.auth;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.resilience4j.micrometer.tagged.TaggedRateLimiterMetrics;
import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * One Resilience4j {@link RateLimiter} per key identity, all with the configured limit, created on a key's first
 * completion. Metrics are Resilience4j's tagged ones ({@code resilience4j_ratelimiter_available_permissions{name=
 * "key-…"}}).
 *
 * <p>Never blocks: the limiters' timeout is zero, so a check either takes a permission at once or fails, and a
 * failed check takes nothing.
 *
 * <p>Only Resilience4j's public API: the wait reported with a refusal is the time to the end of the limiter's current
 * period, counted from when this class created the limiter (Resilience4j's periods start at a limiter's creation,
 * which happens just before; so the figure errs, by microseconds, on the late side, which is the safe side for a
 * {@code Retry-After}).
 */
final class RateLimits {

    /** A key's limiter and when its first period started (System.nanoTime, taken right after its creation). */
    private record Limiter(RateLimiter limiter, long startNanos) {
    }

    private final RateLimiterRegistry registry;
    private final Map<String, Limiter> limiters = new ConcurrentHashMap<>();
    private final long periodNanos;
    private final boolean enabled;

    RateLimits(AuthProperties.RateLimit properties, MeterRegistry meters) {
        this.enabled = properties.enabled();
        this.periodNanos = properties.limitRefreshPeriod().toNanos();
        this.registry = RateLimiterRegistry.of(RateLimiterConfig.custom()
                .limitForPeriod(properties.limitForPeriod())
                .limitRefreshPeriod(properties.limitRefreshPeriod())
                .timeoutDuration(Duration.ZERO)
                .build());
        TaggedRateLimiterMetrics.ofRateLimiterRegistry(registry).bindTo(meters);
    }

    /**
     * Takes one permission for {@code identity}; returns null if it got one, else how long until the next one is
     * available (at least a millisecond).
     */
    Duration tryAcquire(String identity) {
        if (!enabled) {
            return null;
        }
        Limiter limiter = limiters.computeIfAbsent(identity,
                id -> new Limiter(registry.rateLimiter(id), System.nanoTime()));
        if (limiter.limiter().acquirePermission()) {
            return null;
        }
        long intoPeriod = Math.floorMod(System.nanoTime() - limiter.startNanos(), periodNanos);
        return Duration.ofNanos(Math.max(periodNanos - intoPeriod, 1_000_000));
    }
}
