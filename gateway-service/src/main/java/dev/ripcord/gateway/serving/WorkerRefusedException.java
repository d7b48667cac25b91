package dev.ripcord.gateway.serving;

import java.time.Duration;

import dev.ripcord.protocol.Failed;
import org.jspecify.annotations.Nullable;

/**
 * A worker answered a leg's request with a non-2xx status instead of an event stream: it did not admit the request
 * (workers admit only by starting a 200 stream). Stackless: an outcome, classified by {@link WorkerLeg}.
 */
final class WorkerRefusedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final @Nullable Duration retryAfter;
    private final boolean draining;

    WorkerRefusedException(int status, @Nullable Duration retryAfter, String body) {
        super("worker answered " + status + (body.isBlank() ? "" : ": " + abbreviate(body)), null, false, false);
        this.status = status;
        this.retryAfter = retryAfter;
        this.draining = status == 503 && body.contains("\"" + Failed.DRAINING + "\"");
    }

    /** A 503 whose error code is {@value Failed#DRAINING}: the worker is shutting down and admits nothing more. */
    boolean draining() {
        return draining;
    }

    int status() {
        return status;
    }

    /** The worker's {@code Retry-After} on a 503 or 429, else null. */
    @Nullable Duration retryAfter() {
        return retryAfter;
    }

    private static String abbreviate(String body) {
        String oneLine = body.strip().replace('\n', ' ');
        return oneLine.length() <= 200 ? oneLine : oneLine.substring(0, 200) + "…";
    }
}
