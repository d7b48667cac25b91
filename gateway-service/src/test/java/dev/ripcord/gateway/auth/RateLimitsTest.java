package dev.ripcord.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** Per-key rate limits on Resilience4j's public API: a refusal takes nothing and names a wait within the period. */
class RateLimitsTest {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @Test
    void aKeyOverItsLimitIsRefusedWithAWaitNoLongerThanThePeriodAndOtherKeysAreUnaffected() {
        RateLimits limits = new RateLimits(new AuthProperties.RateLimit(true, 2, Duration.ofHours(1)), meters);

        assertThat(limits.tryAcquire("key-a")).isNull();
        assertThat(limits.tryAcquire("key-a")).isNull();
        for (int i = 0; i < 5; i++) {
            Duration wait = limits.tryAcquire("key-a");
            assertThat(wait).isNotNull().isPositive().isLessThanOrEqualTo(Duration.ofHours(1));
        }
        assertThat(limits.tryAcquire("key-b")).as("limits are per key").isNull();
        assertThat(meters.get("resilience4j.ratelimiter.available.permissions").tag("name", "key-a").gauge().value())
                .as("refusals took no permission").isZero();
        assertThat(meters.get("resilience4j.ratelimiter.available.permissions").tag("name", "key-b").gauge().value())
                .isEqualTo(1);
    }

    @Test
    void disabledLimitsNeverRefuse() {
        RateLimits limits = new RateLimits(new AuthProperties.RateLimit(false, 1, Duration.ofHours(1)), meters);

        for (int i = 0; i < 10; i++) {
            assertThat(limits.tryAcquire("key-a")).isNull();
        }
    }
}
