package dev.ripcord.kv;

import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * The session was aborted. Futures of an aborted session fail with this exception. Being a
 * {@link CancellationException}, the future reports {@code isCancelled()}; on JDK 23+ {@code join()} and
 * {@code get()} throw a fresh {@code CancellationException} whose cause is this one, and dependent stages see it
 * inside a {@code CompletionException}: use {@link #reasonOf(Throwable)} or {@link #reasonOf(CompletableFuture)}
 * to get the reason whatever the wrapping. Aborts are expected (a client went away), so the exception carries no
 * stack trace.
 */
public final class TransferAbortedException extends CancellationException {
    private static final long serialVersionUID = 1L;
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

    /** The abort reason anywhere in {@code t}'s cause chain. */
    public static Optional<AbortReason> reasonOf(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof TransferAbortedException e) {
                return Optional.ofNullable(e.reason);
            }
        }
        return Optional.empty();
    }

    /** The abort reason of a failed session future, without blocking; empty if it did not fail that way. */
    public static Optional<AbortReason> reasonOf(CompletableFuture<?> future) {
        if (!future.isCompletedExceptionally()) {
            return Optional.empty();
        }
        Throwable[] seen = new Throwable[1];
        future.whenComplete((v, e) -> seen[0] = e); // runs inline: the future is already complete
        return reasonOf(seen[0]);
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
