package dev.ripcord.worker;

import dev.ripcord.cancel.logging.RequestMdc;

/**
 * Puts a request ID into the logging MDC ({@code requestId}, printed by every service's log pattern) for the
 * duration of a block, on threads that are not Reactor's (the engine loop, transfer callbacks). Reactor pipelines
 * need none of this: {@link RequestIdWebFilter} puts the ID in their context and automatic context propagation
 * puts it in the MDC. Same as {@link RequestMdc}, kept under this name for the schedulers.
 */
public final class RequestLogging {

    public static final String MDC_KEY = RequestMdc.KEY;

    private RequestLogging() {
    }

    /** Like {@link #with(String, Runnable)}, returning what {@code body} returns. */
    public static <T> T withResult(String requestId, java.util.function.Supplier<T> body) {
        return RequestMdc.withResult(requestId, body);
    }

    /** Runs {@code body} with {@code requestId} in the MDC, restoring what was there before. */
    public static void with(String requestId, Runnable body) {
        RequestMdc.with(requestId, body);
    }
}
