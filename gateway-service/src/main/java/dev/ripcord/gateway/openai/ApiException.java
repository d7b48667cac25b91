package dev.ripcord.gateway.openai;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.web.server.ResponseStatusException;

/**
 * An error this gateway reports to the client as an OpenAI error body:
 * {@code {"error":{"message":..., "type":..., "param":..., "code":...}}} with the status of its {@link ErrorCode}.
 *
 * <p>It is a {@link ResponseStatusException}, so any Spring layer that meets it outside the OpenAI routes still
 * answers with the right status. It is stackless: it is an outcome we chose to report (a bad field, a full queue),
 * not a bug, and it is cheap enough to raise on the hot path. When it reports a failure, the {@linkplain #getCause()
 * cause} keeps that failure's stack trace.
 *
 * <p>{@link #message()} is shown to the client verbatim: never put internals (hosts, stack traces) in it.
 */
public class ApiException extends ResponseStatusException {

    private static final long serialVersionUID = 1L;

    private final ErrorCode errorCode;
    private final @Nullable String param;
    private final String clientMessage;
    private final @Nullable Duration retryAfter;

    public ApiException(ErrorCode errorCode, @Nullable String param, String message, @Nullable Duration retryAfter,
            @Nullable Throwable cause) {
        super(errorCode.status(), message, cause);
        this.errorCode = Objects.requireNonNull(errorCode, "errorCode");
        this.param = param;
        this.clientMessage = Objects.requireNonNull(message, "message");
        if (retryAfter != null && retryAfter.isNegative()) {
            throw new IllegalArgumentException("retryAfter must not be negative, got " + retryAfter);
        }
        this.retryAfter = retryAfter;
    }

    /** An error about request field {@code param} (null when it is about the request as a whole). */
    public static ApiException of(ErrorCode errorCode, @Nullable String param, String template, Object... args) {
        return new ApiException(errorCode, param, args.length == 0 ? template : template.formatted(args), null, null);
    }

    /** A 503 the client may retry after {@code retryAfter}. */
    public static ApiException serviceUnavailable(Duration retryAfter, String template, Object... args) {
        return new ApiException(ErrorCode.SERVICE_UNAVAILABLE, null, template.formatted(args),
                Objects.requireNonNull(retryAfter, "retryAfter"), null);
    }

    /** This error with a {@code Retry-After} header. */
    public ApiException withRetryAfter(Duration retryAfter) {
        return new ApiException(errorCode, param, clientMessage, retryAfter, getCause());
    }

    public ErrorCode errorCode() {
        return errorCode;
    }

    /** The request field the error is about, e.g. {@code max_tokens} or {@code messages[1].content}; or null. */
    public @Nullable String param() {
        return param;
    }

    /** The message shown to the client. */
    public String message() {
        return clientMessage;
    }

    public @Nullable Duration retryAfter() {
        return retryAfter;
    }

    /** Includes {@code Retry-After} (whole seconds, rounded up), for Spring layers that render this status. */
    @Override
    public HttpHeaders getHeaders() {
        HttpHeaders headers = new HttpHeaders();
        if (retryAfter != null) {
            headers.set(HttpHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(retryAfter)));
        }
        return headers;
    }

    static long retryAfterSeconds(Duration retryAfter) {
        long seconds = retryAfter.toSeconds();
        return retryAfter.toNanosPart() > 0 ? seconds + 1 : seconds;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
