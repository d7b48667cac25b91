package dev.ripcord.kv;

import java.util.concurrent.CancellationException;

/**
 * The session was aborted. Futures of an aborted session fail with this exception; being a
 * {@link CancellationException}, {@code join()} and {@code get()} throw it directly and {@code isCancelled()} is
 * true. Aborts are expected (a client went away), so the exception carries no stack trace.
 */
public final class TransferAbortedException extends CancellationException {
    private final String requestId;
    private final transient AbortReason reason;

    public TransferAbortedException(String requestId, AbortReason reason) {
        super("request " + requestId + ": transfer aborted (" + reason + ")");
        this.requestId = requestId;
        this.reason = reason;
    }

    public String requestId() {
        return requestId;
    }

    public AbortReason reason() {
        return reason;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
