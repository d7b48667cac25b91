package dev.ripcord.cancel;

/**
 * A cancellation could not be published: rejected up front (queue full, shutting down) or given up after retries.
 * An expected condition when the broker is unreachable, hence stackless; the cause, if any, is the last send failure.
 */
public final class CancelPublishException extends RuntimeException {

    public CancelPublishException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
