package dev.ripcord.gateway.resilience;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code ripcord.gateway.resilience.*}: how the gateway protects itself and the client from sick workers. Every
 * gateway→worker leg goes through one circuit breaker and one bulkhead per worker instance, an admission timeout,
 * and retries that stop at the worker's admission (see {@code docs/architecture.md}, "Resilience").
 *
 * @param admissionTimeout how long a leg may wait, from sending its request, for the worker's first event (decode
 *                         RESERVED, prefill QUEUED) or a non-2xx status; connecting is included. Nothing times a
 *                         leg after that: a healthy stream may run as long as the request's deadline allows
 * @param retryAfter       what {@code Retry-After} says when no instance of a role can take a leg (every breaker
 *                         open, every bulkhead full) and no worker said otherwise
 * @param retry            attempts per leg before admission
 * @param circuitBreaker   one breaker per worker instance
 * @param bulkhead         one bulkhead per worker instance
 */
@ConfigurationProperties("ripcord.gateway.resilience")
public record ResilienceProperties(
        @DefaultValue("30s") Duration admissionTimeout,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue Retry retry,
        @DefaultValue CircuitBreaker circuitBreaker,
        @DefaultValue Bulkhead bulkhead) {

    public ResilienceProperties {
        requirePositive(admissionTimeout, "admission-timeout");
        requirePositive(retryAfter, "retry-after");
    }

    /**
     * Retries of a leg that failed before its worker admitted it.
     *
     * @param maxAttempts    attempts per leg, the first one included ({@code 1} disables retries)
     * @param initialBackoff delay before the first retry; doubles per retry, randomized by ±50 %
     * @param maxBackoff     upper bound of one delay
     */
    public record Retry(
            @DefaultValue("3") int maxAttempts,
            @DefaultValue("100ms") Duration initialBackoff,
            @DefaultValue("2s") Duration maxBackoff) {

        public Retry {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException(
                        "ripcord.gateway.resilience.retry.max-attempts must be at least 1, got " + maxAttempts);
            }
            requirePositive(initialBackoff, "retry.initial-backoff");
            requirePositive(maxBackoff, "retry.max-backoff");
            if (maxBackoff.compareTo(initialBackoff) < 0) {
                throw new IllegalArgumentException("ripcord.gateway.resilience.retry.max-backoff (" + maxBackoff
                        + ") must not be below retry.initial-backoff (" + initialBackoff + ")");
            }
        }
    }

    /**
     * One count-based circuit breaker per worker instance.
     *
     * @param failureRateThreshold        percentage of failed calls in the window that opens the breaker
     * @param slidingWindowSize           calls the failure rate is computed over
     * @param minimumNumberOfCalls        calls needed in the window before the rate counts
     * @param waitDurationInOpenState     how long an open breaker keeps its instance out of routing before it lets
     *                                    probes through (half-open)
     * @param permittedCallsInHalfOpenState probes let through while half-open; their outcome closes or reopens it
     */
    public record CircuitBreaker(
            @DefaultValue("50") float failureRateThreshold,
            @DefaultValue("20") int slidingWindowSize,
            @DefaultValue("10") int minimumNumberOfCalls,
            @DefaultValue("10s") Duration waitDurationInOpenState,
            @DefaultValue("2") int permittedCallsInHalfOpenState) {

        public CircuitBreaker {
            if (!(failureRateThreshold > 0 && failureRateThreshold <= 100)) {
                throw new IllegalArgumentException("ripcord.gateway.resilience.circuit-breaker.failure-rate-threshold "
                        + "must be in (0, 100], got " + failureRateThreshold);
            }
            requireAtLeastOne(slidingWindowSize, "circuit-breaker.sliding-window-size");
            requireAtLeastOne(minimumNumberOfCalls, "circuit-breaker.minimum-number-of-calls");
            requireAtLeastOne(permittedCallsInHalfOpenState, "circuit-breaker.permitted-calls-in-half-open-state");
            requirePositive(waitDurationInOpenState, "circuit-breaker.wait-duration-in-open-state");
        }
    }

    /**
     * One semaphore bulkhead per worker instance; it never waits: a full one makes routing try the next instance.
     *
     * @param maxConcurrentRequests legs in flight to one instance at most (a leg holds its slot from routing until
     *                              its stream ends)
     */
    public record Bulkhead(@DefaultValue("1024") int maxConcurrentRequests) {

        public Bulkhead {
            requireAtLeastOne(maxConcurrentRequests, "bulkhead.max-concurrent-requests");
        }
    }

    /** The defaults, for tests and for wiring without a binder. */
    public static ResilienceProperties defaults() {
        return new ResilienceProperties(Duration.ofSeconds(30), Duration.ofSeconds(1),
                new Retry(3, Duration.ofMillis(100), Duration.ofSeconds(2)),
                new CircuitBreaker(50, 20, 10, Duration.ofSeconds(10), 2),
                new Bulkhead(1024));
    }

    private static void requirePositive(Duration value, String name) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException("ripcord.gateway.resilience." + name + " must be positive, got " + value);
        }
    }

    private static void requireAtLeastOne(int value, String name) {
        if (value < 1) {
            throw new IllegalArgumentException("ripcord.gateway.resilience." + name + " must be at least 1, got " + value);
        }
    }
}
