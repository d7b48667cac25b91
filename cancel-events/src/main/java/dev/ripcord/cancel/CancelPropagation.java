package dev.ripcord.cancel;

/**
 * Which paths carry a cancellation between services: {@code ripcord.cancel.propagation=both|in-band|kafka|none}.
 * Both paths feed the same {@link CancellationRegistry}, which turns any number of signals into one abort, so running
 * both is safe and is the default: in-band is fast, Kafka reaches legs the in-band path cannot (a worker that has not
 * seen the request yet, every replica).
 */
public enum CancelPropagation {
    BOTH(true, true),
    IN_BAND(true, false),
    KAFKA(false, true),
    NONE(false, false);

    private final boolean inBand;
    private final boolean kafka;

    CancelPropagation(boolean inBand, boolean kafka) {
        this.inBand = inBand;
        this.kafka = kafka;
    }

    /** Whether services forward cancellation in the request path (headers, stream resets). */
    public boolean inBand() {
        return inBand;
    }

    /** Whether cancellations are published to, and consumed from, the cancellations topic. */
    public boolean kafka() {
        return kafka;
    }
}
