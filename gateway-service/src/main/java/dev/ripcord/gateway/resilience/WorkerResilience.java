package dev.ripcord.gateway.resilience;

import java.time.Clock;
import java.time.Duration;
import java.util.function.Predicate;

import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.bulkhead.BulkheadRegistry;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.core.IntervalFunction;
import io.github.resilience4j.micrometer.tagged.TaggedBulkheadMetrics;
import io.github.resilience4j.micrometer.tagged.TaggedCircuitBreakerMetrics;
import io.github.resilience4j.micrometer.tagged.TaggedRetryMetrics;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The gateway's Resilience4j registries, configured from {@link ResilienceProperties} (programmatically: the
 * Resilience4j Spring Boot starter is not used), and their Micrometer binding.
 *
 * <ul>
 *   <li>one {@link CircuitBreaker} and one {@link Bulkhead} per worker instance, both named
 *       {@code <role>:<host>:<port>} (e.g. {@code decode:127.0.0.1:8082}); Prometheus shows them as
 *       {@code resilience4j_circuitbreaker_state{name=...,state=...}} and
 *       {@code resilience4j_bulkhead_available_concurrent_calls{name=...}};</li>
 *   <li>one {@link Retry} per role ({@code decode}, {@code prefill}): {@code resilience4j_retry_calls_total{name=...,
 *       kind=...}}.</li>
 * </ul>
 *
 * <p>Nothing here blocks: bulkheads never wait (a full one is skipped), breakers are only asked for permission and
 * told outcomes, and retries are scheduled by the caller ({@link Retry#asyncContext()} hands out the delay, never
 * sleeps).
 */
public final class WorkerResilience implements MeterBinder {

    private final CircuitBreakerRegistry circuitBreakers;
    private final BulkheadRegistry bulkheads;
    private final RetryRegistry retries;
    private final ResilienceProperties properties;
    private final Clock clock;

    public WorkerResilience(ResilienceProperties properties) {
        this(properties, Clock.systemUTC());
    }

    /** @param clock the breakers' clock (how long an open breaker has waited); tests pass a settable one */
    public WorkerResilience(ResilienceProperties properties, Clock clock) {
        this.properties = properties;
        this.clock = clock;
        ResilienceProperties.CircuitBreaker cb = properties.circuitBreaker();
        this.circuitBreakers = CircuitBreakerRegistry.of(CircuitBreakerConfig.custom()
                .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
                .slidingWindowSize(cb.slidingWindowSize())
                .minimumNumberOfCalls(cb.minimumNumberOfCalls())
                .failureRateThreshold(cb.failureRateThreshold())
                .waitDurationInOpenState(cb.waitDurationInOpenState())
                .permittedNumberOfCallsInHalfOpenState(cb.permittedCallsInHalfOpenState())
                // Open -> half-open happens on the first routing decision after the wait: no timer thread.
                .automaticTransitionFromOpenToHalfOpenEnabled(false)
                .writableStackTraceEnabled(false)
                .clock(clock)
                .build());
        this.bulkheads = BulkheadRegistry.of(BulkheadConfig.custom()
                .maxConcurrentCalls(properties.bulkhead().maxConcurrentRequests())
                .maxWaitDuration(Duration.ZERO) // never park a thread: a full bulkhead is skipped
                .writableStackTraceEnabled(false)
                .build());
        this.retries = RetryRegistry.ofDefaults();
    }

    /** The breaker of the worker instance named {@code name} ({@code <role>:<host>:<port>}); created once. */
    public CircuitBreaker circuitBreaker(String name) {
        return circuitBreakers.circuitBreaker(name);
    }

    /** The bulkhead of the worker instance named {@code name}; created once. */
    public Bulkhead bulkhead(String name) {
        return bulkheads.bulkhead(name);
    }

    /**
     * The retry of one role's legs: {@code retry.max-attempts} attempts, exponential randomized backoff, and only
     * for failures {@code retryOn} accepts (the caller's rule: before admission, and safe for that role).
     */
    public Retry retry(String role, Predicate<Throwable> retryOn) {
        ResilienceProperties.Retry r = properties.retry();
        return retries.retry(role, RetryConfig.custom()
                .maxAttempts(r.maxAttempts())
                .intervalFunction(IntervalFunction.ofExponentialRandomBackoff(r.initialBackoff(), 2.0, 0.5,
                        r.maxBackoff()))
                .retryOnException(retryOn)
                .failAfterMaxAttempts(false)
                .writableStackTraceEnabled(false)
                .build());
    }

    /** The breakers' clock, which also times how long a draining worker stays out of routing. */
    public Clock clock() {
        return clock;
    }

    public ResilienceProperties properties() {
        return properties;
    }

    public CircuitBreakerRegistry circuitBreakers() {
        return circuitBreakers;
    }

    public BulkheadRegistry bulkheads() {
        return bulkheads;
    }

    public RetryRegistry retries() {
        return retries;
    }

    /** Binds Resilience4j's tagged metrics of all three registries, for present and future entries. */
    @Override
    public void bindTo(MeterRegistry meters) {
        TaggedCircuitBreakerMetrics.ofCircuitBreakerRegistry(circuitBreakers).bindTo(meters);
        TaggedBulkheadMetrics.ofBulkheadRegistry(bulkheads).bindTo(meters);
        TaggedRetryMetrics.ofRetryRegistry(retries).bindTo(meters);
    }
}
