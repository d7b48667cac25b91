package dev.ripcord.gateway.generation;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * No worker could take the request now (every instance busy, breakers open, none reachable): nothing was generated
 * and nothing is held, so the client may simply try again after {@link #retryAfter()}.
 */
public final class WorkerUnavailableException extends GenerationException {

    private static final long serialVersionUID = 1L;

    private final Duration retryAfter;

    /**
     * @param message    for the client, e.g. {@code the decode workers are at capacity; retry after 2 s}
     * @param retryAfter when a retry may succeed; not negative
     */
    public WorkerUnavailableException(String message, Duration retryAfter, @Nullable Throwable cause) {
        super(message, cause);
        this.retryAfter = Objects.requireNonNull(retryAfter, "retryAfter");
        if (retryAfter.isNegative()) {
            throw new IllegalArgumentException("retryAfter must not be negative, got " + retryAfter);
        }
    }

    public Duration retryAfter() {
        return retryAfter;
    }
}
