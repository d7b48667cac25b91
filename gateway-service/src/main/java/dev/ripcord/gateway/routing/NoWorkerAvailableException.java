package dev.ripcord.gateway.routing;

/**
 * No instance of a role could take a leg: every one's circuit breaker refused (open, or half-open with its probes
 * out) or its bulkhead was full. Nothing was sent anywhere. Stackless: an expected outcome under load or outage.
 */
public final class NoWorkerAvailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String role;
    private final int breakersOpen;
    private final int bulkheadsFull;

    NoWorkerAvailableException(String role, int breakersOpen, int bulkheadsFull) {
        super("no " + role + " worker available: " + breakersOpen + " circuit breaker(s) open, " + bulkheadsFull
                + " bulkhead(s) full", null, false, false);
        this.role = role;
        this.breakersOpen = breakersOpen;
        this.bulkheadsFull = bulkheadsFull;
    }

    public String role() {
        return role;
    }

    public int breakersOpen() {
        return breakersOpen;
    }

    public int bulkheadsFull() {
        return bulkheadsFull;
    }
}
