package dev.ripcord.gateway.routing;

/**
 * No instance of a role could take a leg: there is none (discovery found no pod), or every one's circuit breaker
 * refused (open, or half-open with its probes out), its bulkhead was full, or it is draining. Nothing was sent anywhere. Stackless: an expected outcome under load or outage.
 */
public final class NoWorkerAvailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String role;
    private final int breakersOpen;
    private final int bulkheadsFull;
    private final int draining;

    NoWorkerAvailableException(String role, int breakersOpen, int bulkheadsFull, int draining) {
        super("no " + role + " worker available: " + breakersOpen + " circuit breaker(s) open, " + bulkheadsFull
                + " bulkhead(s) full, " + draining + " draining", null, false, false);
        this.role = role;
        this.breakersOpen = breakersOpen;
        this.bulkheadsFull = bulkheadsFull;
        this.draining = draining;
    }

    /** Instances skipped because they said they are draining. */
    public int draining() {
        return draining;
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
