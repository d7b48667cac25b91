package dev.ripcord.protocol;

/**
 * A request ID that breaks the rules of {@link RequestIds}. Expected at the edges (anyone can send a header), so it is
 * stackless: building it costs no stack walk, and it is reported as a client error, never logged as an error.
 */
public final class InvalidRequestIdException extends IllegalArgumentException {

    InvalidRequestIdException(String message) {
        super(message);
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
