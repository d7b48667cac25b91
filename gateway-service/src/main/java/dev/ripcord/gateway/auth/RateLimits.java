package dev.ripcord.gateway.auth;

import java.time.Duration;

import io.github.resilience4j.micrometer.tagged.TaggedRateLimiterMetrics;
import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * One Resilience4j {@link RateLimiter} per key identity, all with the configured limit, created on a key's first
 * completion. Metrics are Resilience4j's tagged ones ({@code resilience4j_ratelimiter_available_permissions{name=
 * "key-…"}}).
 *
 * <p>Never blocks: the limiters' timeout is zero, so a check either takes a permission at once or fails, and a
 * failed check takes nothing.
 */
final class RateLimits {

    private final RateLimiterRegistry registry;
    private final boolean enabled;

    RateLimits(AuthProperties.RateLimit properties, MeterRegistry meters) {
        this.enabled = properties.enabled();
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
        RateLimiter limiter = registry.rateLimiter(identity);
        if (limiter.acquirePermission()) {
            return null;
        }
        long nanos = limiter instanceof AtomicRateLimiter atomic ? atomic.getDetailedMetrics().getNanosToWait()
                : limiter.getRateLimiterConfig().getLimitRefreshPeriod().toNanos();
        return Duration.ofNanos(Math.max(nanos, 1_000_000));
    }
}
