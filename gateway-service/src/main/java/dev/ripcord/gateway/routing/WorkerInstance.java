package dev.ripcord.gateway.routing;

import java.net.URI;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;

/**
 * One prefill or decode worker the gateway can route to: its count of legs in flight, its circuit breaker and its
 * bulkhead, all three named {@link #name()} = {@code <role>:<host>:<port>} (the name metrics carry).
 */
public final class WorkerInstance {

    private final String role;
    private final URI uri;
    private final String name;
    private final CircuitBreaker circuitBreaker;
    private final Bulkhead bulkhead;
    private final AtomicInteger outstanding = new AtomicInteger();
    private final AtomicInteger routed = new AtomicInteger();
    private final java.time.Clock clock;
    /** Epoch millisecond (of {@link #clock}) until which the instance is not routed to; 0: not draining. */
    private volatile long drainingUntil;

    WorkerInstance(String role, URI uri, CircuitBreaker circuitBreaker, Bulkhead bulkhead, java.time.Clock clock) {
        this.clock = clock;
        this.role = role;
        this.uri = uri;
        this.name = nameOf(role, uri);
        this.circuitBreaker = circuitBreaker;
        this.bulkhead = bulkhead;
    }

    /** {@code <role>:<host>:<port>}, e.g. {@code decode:127.0.0.1:8082}; the port defaults by scheme. */
    public static String nameOf(String role, URI uri) {
        int port = uri.getPort();
        if (port < 0) {
            port = "https".equals(uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT)) ? 443 : 80;
        }
        return role + ":" + uri.getHost() + ":" + port;
    }

    /**
     * {@code <host>:<port>} (the port defaulted by scheme): how a worker names itself on the prefix-cache topic
     * ({@code ripcord.prefill.cache-events.worker-id}).
     */
    public String authority() {
        return name.substring(role.length() + 1);
    }

    public String role() {
        return role;
    }

    public URI uri() {
        return uri;
    }

    public String name() {
        return name;
    }

    public CircuitBreaker circuitBreaker() {
        return circuitBreaker;
    }

    public Bulkhead bulkhead() {
        return bulkhead;
    }

    /** Legs routed here and not yet finished. */
    public int outstanding() {
        return outstanding.get();
    }

    /** Legs ever routed here (a lease was handed out), for tests and diagnostics. */
    public int routed() {
        return routed.get();
    }

    /**
     * The worker said it is draining (a {@code 503} whose code is {@code draining}): no new leg goes to it for
     * {@link #DRAIN_MARK}, or until it leaves the pool and comes back. Legs already on it are not touched. The mark
     * expires so that a statically listed worker that restarts at the same address is used again soon; one that
     * still drains then refuses one more attempt (which the gateway retries elsewhere) and is marked again. Long
     * enough to cover a Kubernetes pod leaving its headless Service's answer (readiness probe, then the gateway's
     * next DNS refresh).
     */
    public void markDraining() {
        drainingUntil = Math.max(1, clock.millis() + DRAIN_MARK.toMillis());
    }

    /** How long a {@link #markDraining()} keeps the instance out of routing when nothing else clears it. */
    public static final java.time.Duration DRAIN_MARK = java.time.Duration.ofSeconds(15);

    /** Whether routing skips this instance because it said it is draining. */
    public boolean draining() {
        long until = drainingUntil;
        return until != 0 && clock.millis() < until;
    }

    void clearDraining() {
        drainingUntil = 0;
    }

    AtomicInteger counter() {
        return outstanding;
    }

    AtomicInteger routedCounter() {
        return routed;
    }

    @Override
    public String toString() {
        return name;
    }
}
