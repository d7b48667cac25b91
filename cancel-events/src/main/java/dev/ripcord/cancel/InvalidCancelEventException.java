package dev.ripcord.cancel;

import java.util.Objects;

import dev.ripcord.protocol.RequestIds;

/**
 * Bytes that are not a {@link CancelEvent} this build can read. Poison records are an expected condition (anyone can
 * write to a topic), so this is stackless and consumers log it at WARN; {@link #problem()} is a stable code that also
 * goes into the dead-letter record's headers.
 */
public final class InvalidCancelEventException extends IllegalArgumentException {

    /** Stable codes for what was wrong with the record. */
    public enum Problem {
        /** Not parseable as JSON, or not a JSON object. */
        NOT_JSON,
        /** A required field is absent or null. */
        MISSING_FIELD,
        /** A field has the wrong type or a value this build does not know (e.g. an unknown reason). */
        INVALID_FIELD,
        /** The request ID breaks the rules of {@link RequestIds}. */
        INVALID_REQUEST_ID,
        /** {@code schemaVersion} is one this build does not read. */
        UNSUPPORTED_SCHEMA_VERSION,
        /** The record key is not the event's request ID, which would break compaction. */
        KEY_MISMATCH
    }

    private final Problem problem;

    public InvalidCancelEventException(Problem problem, String message) {
        super(message);
        this.problem = Objects.requireNonNull(problem, "problem");
    }

    public Problem problem() {
        return problem;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
