package dev.ripcord.protocol;

import java.util.Objects;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonTypeName;

/**
 * A worker's answer when something is wrong or broke: the last event of a stream, or the body of a refusal
 * (400/409/503). Never used for a cancel (see {@link Cancelled}).
 *
 * @param code              stable, machine-readable: one of the constants below
 * @param message           for people and logs
 * @param retryAfterSeconds for {@link #BUSY} and {@link #DRAINING}: when the worker estimates a retry may succeed,
 *                          in whole seconds (the gateway's {@code Retry-After}); null when it has no estimate (left
 *                          out of the JSON)
 */
@JsonTypeName("FAILED")
public record Failed(String code, String message,
                     @JsonInclude(JsonInclude.Include.NON_NULL) Long retryAfterSeconds)
        implements PrefillEvent, DecodeEvent {

    /** The request is malformed (400). */
    public static final String INVALID_REQUEST = "invalid_request";
    /** The worker is full (503 with {@code Retry-After}). */
    public static final String BUSY = "busy";
    /**
     * The worker is draining (503 with {@code Retry-After}): it admits nothing more and finishes what it holds. The
     * gateway stops routing to it at once.
     */
    public static final String DRAINING = "draining";
    /** The ID is already in flight on this worker (409). */
    public static final String DUPLICATE = "duplicate_request";
    /**
     * A prefill worker refuses to push KV to a decode worker that serves another model or runs another numeric
     * definition ({@link Pairing}) (409).
     */
    public static final String PAIRING_MISMATCH = "pairing_mismatch";
    /** The KV transfer failed for a reason other than a cancel. */
    public static final String TRANSFER_FAILED = "transfer_failed";
    /** The engine failed while working on the request. */
    public static final String ENGINE_FAILED = "engine_failed";

    public Failed {
        Objects.requireNonNull(code, "code");
        message = message == null ? "" : message;
        if (retryAfterSeconds != null && retryAfterSeconds < 0) {
            throw new IllegalArgumentException("retryAfterSeconds " + retryAfterSeconds + " is negative");
        }
    }

    /** {@code after} as a {@code Retry-After}: whole seconds, rounded up, at least 1. */
    public static long retryAfterSeconds(java.time.Duration after) {
        return Math.max(1, after.toSeconds() + (after.toNanosPart() > 0 ? 1 : 0));
    }

    /** A failure with no retry estimate. */
    public Failed(String code, String message) {
        this(code, message, null);
    }
}
