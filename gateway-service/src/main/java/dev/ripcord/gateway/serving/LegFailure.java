package dev.ripcord.gateway.serving;

import java.time.Duration;

import dev.ripcord.gateway.generation.GenerationException;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import org.jspecify.annotations.Nullable;

/**
 * A leg attempt failed before its worker admitted the request ({@link LegState#CONNECTING}). Only these failures
 * are ever retried, and only the kinds the leg's role allows (see {@link WorkerLeg}). Stackless; the cause keeps the
 * underlying failure.
 */
final class LegFailure extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** What went wrong before admission, and what it tells about the worker. */
    enum Kind {
        /** No instance could take the leg (breakers open, bulkheads full): nothing was sent. */
        NO_WORKER,
        /** The connection could not be made (refused, connect timeout, unknown host): nothing was sent. */
        NOT_CONNECTED,
        /** The worker answered 503 or 429 (queue full, no KV pages): it kept nothing. */
        BUSY,
        /**
         * The worker answered 503 {@code draining} at its HTTP edge, before its scheduler saw the request: it kept
         * nothing (no registration, no transfer session), so every role may retry on another instance.
         */
        DRAINING,
        /** The worker answered another 5xx: it did not admit this call (e.g. a duplicate request ID it still holds). */
        WORKER_ERROR,
        /** The worker answered 4xx: this request (or the gateway's credentials) is wrong; retrying cannot help. */
        REJECTED,
        /** No first event within the admission timeout, or the connection broke before one: the worker may have
         *  seen the request. */
        NO_ANSWER
    }

    private final String role;
    private final Kind kind;
    private final boolean retriable;
    private final @Nullable Duration retryAfter;

    LegFailure(String role, Kind kind, boolean retriable, @Nullable Duration retryAfter, Throwable cause) {
        super(role + " leg failed before admission (" + kind + "): " + cause.getMessage(), cause, false, false);
        this.role = role;
        this.kind = kind;
        this.retriable = retriable;
        this.retryAfter = retryAfter;
    }

    Kind kind() {
        return kind;
    }

    /** Whether the leg's role may retry this kind at all (attempts left is the retry's business). */
    boolean retriable() {
        return retriable;
    }

    /**
     * What the generation fails with once no attempt is left: no worker available, with when to retry (a 503 with
     * {@code Retry-After} at the edge), or a worker fault (a 500).
     */
    GenerationException toGenerationFailure(Duration defaultRetryAfter) {
        return switch (kind) {
            case WORKER_ERROR, REJECTED -> new GenerationFailedException(
                    "the " + role + " worker failed this request", getCause());
            case BUSY -> {
                Duration after = retryAfter != null ? retryAfter : defaultRetryAfter;
                yield new WorkerUnavailableException("the %s workers are at capacity; retry after %d s"
                        .formatted(role, seconds(after)), after, getCause());
            }
            case NO_WORKER, NOT_CONNECTED, NO_ANSWER, DRAINING -> new WorkerUnavailableException(
                    "no %s worker is available; retry after %d s".formatted(role, seconds(defaultRetryAfter)),
                    defaultRetryAfter, getCause());
        };
    }

    private static long seconds(Duration d) {
        return Math.max(1, d.toSeconds() + (d.toNanosPart() > 0 ? 1 : 0));
    }
}
