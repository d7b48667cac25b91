package dev.ripcord.gateway.generation;

import org.jspecify.annotations.Nullable;

/**
 * A worker failed the request (an error event, a stream that broke after admission, a refusal that retrying cannot
 * help): a server fault, not the client's. The message names the worker's role only.
 */
public final class GenerationFailedException extends GenerationException {

    private static final long serialVersionUID = 1L;

    /** @param message for the client, e.g. {@code the decode worker failed this request} */
    public GenerationFailedException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
