package dev.ripcord.gateway.generation;

import org.jspecify.annotations.Nullable;

/**
 * Why a generation did not produce its answer, in the serving core's terms: the only failures a
 * {@link TokenGenerator} reports on purpose. The set is closed (sealed), so the HTTP edge that turns each kind into
 * a client-visible error can switch over it exhaustively; a new kind does not compile until the edge maps it.
 *
 * <p>{@link #getMessage()} is safe to show to a client: it names the request or the role of a worker, never a host,
 * port or stack trace. The {@linkplain #getCause() cause}, when there is one, keeps the underlying failure for logs.
 * Stackless: these are outcomes on the hot path (a cancel, a full queue), not bugs, and are cheap to raise.
 */
public abstract sealed class GenerationException extends RuntimeException
        permits RequestCancelledException, DeadlineExceededException, WorkerUnavailableException,
        GenerationFailedException, DuplicateRequestIdException {

    private static final long serialVersionUID = 1L;

    GenerationException(String message, @Nullable Throwable cause) {
        super(message, cause, false, false);
    }
}
