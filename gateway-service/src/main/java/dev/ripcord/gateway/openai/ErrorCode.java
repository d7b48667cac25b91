package dev.ripcord.gateway.openai;

import org.springframework.http.HttpStatus;

/**
 * Every error a client of the OpenAI surface can see: HTTP status, OpenAI {@code type} and stable {@code code}.
 * Clients may branch on {@link #code()}; the set only grows. The table is repeated in {@code docs/openai.md}.
 */
public enum ErrorCode {
    /** The body is not JSON, is empty, or its root is not an object. */
    INVALID_JSON(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_json"),
    /** The body is not valid UTF-8, or a string holds an unpaired surrogate. */
    INVALID_ENCODING(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_encoding"),
    /** A field has the wrong JSON type. */
    INVALID_TYPE(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_type"),
    /** A required field is absent or null. */
    MISSING_REQUIRED_PARAMETER(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "missing_required_parameter"),
    /** A field has the right type but a value outside its range. */
    INVALID_VALUE(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_value"),
    /** A valid OpenAI value this server does not implement ({@code n > 1}, {@code echo: true}, ...). */
    UNSUPPORTED_VALUE(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "unsupported_value"),
    /** A field this endpoint does not know. */
    UNKNOWN_PARAMETER(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "unknown_parameter"),
    /** The {@code X-Request-Id} header is not 1..128 characters of {@code [A-Za-z0-9._:-]}. */
    INVALID_REQUEST_ID(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_request_id"),
    /** The prompt, or prompt plus {@code max_tokens}, does not fit in the context window. */
    CONTEXT_LENGTH_EXCEEDED(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "context_length_exceeded"),
    /** The path has more than one reading ({@code ;params}, an escaped letter or separator, a dot or empty segment). */
    INVALID_PATH(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "invalid_path"),
    /**
     * Rendering {@code messages} with the model's chat template went past a render limit (output, string or list
     * size, steps, time; {@code ripcord.openai.template-limits.*}).
     */
    CHAT_TEMPLATE_LIMIT_EXCEEDED(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "chat_template_limit_exceeded"),
    /** Any other 400 raised by the framework (e.g. an unreadable request). */
    BAD_REQUEST(HttpStatus.BAD_REQUEST, Type.INVALID_REQUEST, "bad_request"),
    /** The {@code model} is not the one this server serves. */
    MODEL_NOT_FOUND(HttpStatus.NOT_FOUND, Type.INVALID_REQUEST, "model_not_found"),
    /** No endpoint at this path. */
    UNKNOWN_URL(HttpStatus.NOT_FOUND, Type.INVALID_REQUEST, "unknown_url"),
    REQUEST_NOT_FOUND(HttpStatus.NOT_FOUND, Type.INVALID_REQUEST, "request_not_found"),
    /** The endpoint exists but not for this method; the response carries {@code Allow}. */
    METHOD_NOT_ALLOWED(HttpStatus.METHOD_NOT_ALLOWED, Type.INVALID_REQUEST, "method_not_allowed"),
    /** The {@code Accept} header excludes both JSON and server-sent events. */
    NOT_ACCEPTABLE(HttpStatus.NOT_ACCEPTABLE, Type.INVALID_REQUEST, "not_acceptable"),
    /** The body is larger than {@code ripcord.gateway.openai.max-body-size}. */
    REQUEST_TOO_LARGE(HttpStatus.CONTENT_TOO_LARGE, Type.INVALID_REQUEST, "request_too_large"),
    /** The {@code Content-Type} is not {@code application/json} (UTF-8). */
    UNSUPPORTED_MEDIA_TYPE(HttpStatus.UNSUPPORTED_MEDIA_TYPE, Type.INVALID_REQUEST, "unsupported_media_type"),
    /** No {@code Authorization: Bearer} key, or not one the gateway accepts; carries {@code WWW-Authenticate}. */
    INVALID_API_KEY(HttpStatus.UNAUTHORIZED, Type.INVALID_REQUEST, "invalid_api_key"),
    /** Too many requests from this client; carries {@code Retry-After}. */
    RATE_LIMIT_EXCEEDED(HttpStatus.TOO_MANY_REQUESTS, Type.RATE_LIMIT, "rate_limit_exceeded"),
    /** This API key already has {@code ripcord.gateway.auth.max-concurrent-streams} completions in flight. */
    CONCURRENCY_LIMIT_EXCEEDED(HttpStatus.TOO_MANY_REQUESTS, Type.RATE_LIMIT, "concurrency_limit_exceeded"),
    /** A bug or an unexpected failure; the message never carries internals. */
    REQUEST_CANCELLED(HttpStatus.CONFLICT, Type.INVALID_REQUEST, "request_cancelled"),
    DUPLICATE_REQUEST_ID(HttpStatus.CONFLICT, Type.INVALID_REQUEST, "duplicate_request_id"),
    INTERNAL_ERROR(HttpStatus.INTERNAL_SERVER_ERROR, Type.SERVER, "internal_error"),
    /** No capacity right now (queues full, no healthy worker); carries {@code Retry-After}. */
    SERVICE_UNAVAILABLE(HttpStatus.SERVICE_UNAVAILABLE, Type.SERVER, "service_unavailable"),
    /** The request's deadline passed before the generation finished. */
    TIMEOUT(HttpStatus.GATEWAY_TIMEOUT, Type.SERVER, "timeout");

    private final HttpStatus status;
    private final Type type;
    private final String code;

    ErrorCode(HttpStatus status, Type type, String code) {
        this.status = status;
        this.type = type;
        this.code = code;
    }

    public HttpStatus status() {
        return status;
    }

    /** The OpenAI error {@code type}: {@code invalid_request_error}, {@code rate_limit_error} or {@code server_error}. */
    public String type() {
        return type.wire;
    }

    /** The stable OpenAI error {@code code}. */
    public String code() {
        return code;
    }

    /** The code to use for a framework error that carries only an HTTP status. */
    static ErrorCode forStatus(int status) {
        return switch (status) {
            case 400 -> BAD_REQUEST;
            case 404 -> UNKNOWN_URL;
            case 405 -> METHOD_NOT_ALLOWED;
            case 406 -> NOT_ACCEPTABLE;
            case 413 -> REQUEST_TOO_LARGE;
            case 415 -> UNSUPPORTED_MEDIA_TYPE;
            case 429 -> RATE_LIMIT_EXCEEDED;
            case 503 -> SERVICE_UNAVAILABLE;
            case 504 -> TIMEOUT;
            default -> status >= 400 && status < 500 ? BAD_REQUEST : INTERNAL_ERROR;
        };
    }

    private enum Type {
        INVALID_REQUEST("invalid_request_error"),
        RATE_LIMIT("rate_limit_error"),
        SERVER("server_error");

        private final String wire;

        Type(String wire) {
            this.wire = wire;
        }
    }
}
