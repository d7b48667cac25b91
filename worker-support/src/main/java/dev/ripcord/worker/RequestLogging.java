package dev.ripcord.worker;

import org.slf4j.MDC;

/**
 * Puts a request ID into the logging MDC ({@code requestId}, printed by every service's log pattern) for the
 * duration of a block, on threads that are not Reactor's (the engine loop, transfer callbacks).
 */
public final class RequestLogging {

    public static final String MDC_KEY = "requestId";

    private RequestLogging() {
    }

    /** Like {@link #with(String, Runnable)}, returning what {@code body} returns. */
    public static <T> T withResult(String requestId, java.util.function.Supplier<T> body) {
        String previous = MDC.get(MDC_KEY);
        MDC.put(MDC_KEY, requestId);
        try {
            return body.get();
        } finally {
            restore(previous);
        }
    }

    /** Runs {@code body} with {@code requestId} in the MDC, restoring what was there before. */
    public static void with(String requestId, Runnable body) {
        String previous = MDC.get(MDC_KEY);
        MDC.put(MDC_KEY, requestId);
        try {
            body.run();
        } finally {
            restore(previous);
        }
    }

    private static void restore(String previous) {
        if (previous == null) {
            MDC.remove(MDC_KEY);
        } else {
            MDC.put(MDC_KEY, previous);
        }
    }
}
