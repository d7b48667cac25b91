package dev.ripcord.cancel.logging;

import java.util.function.Supplier;

import dev.ripcord.protocol.RequestIds;
import org.slf4j.MDC;

/**
 * The request ID in the logging MDC, under {@value #KEY}: the key every service's log pattern prints and every JSON
 * log line carries as a field. It is also the Reactor {@code Context} key under which the services keep the request
 * ID; {@link RequestIdThreadLocalAccessor} bridges the two, so a reactive pipeline never calls this class.
 *
 * <p>For code that runs outside a Reactor pipeline (the engine loop, transfer callbacks, a Kafka consumer, a timer
 * that cancels a request) {@link #with} sets it for the duration of a block and restores what was there before.
 */
public final class RequestMdc {

    /** MDC key and Reactor context key of the request ID: {@link RequestIds#CONTEXT_KEY}, the one key. */
    public static final String KEY = RequestIds.CONTEXT_KEY;

    private RequestMdc() {
    }

    /** Runs {@code body} with {@code requestId} in the MDC, restoring what was there before. */
    public static void with(String requestId, Runnable body) {
        String previous = MDC.get(KEY);
        MDC.put(KEY, requestId);
        try {
            body.run();
        } finally {
            restore(previous);
        }
    }

    /** Like {@link #with(String, Runnable)}, returning what {@code body} returns. */
    public static <T> T withResult(String requestId, Supplier<T> body) {
        String previous = MDC.get(KEY);
        MDC.put(KEY, requestId);
        try {
            return body.get();
        } finally {
            restore(previous);
        }
    }

    static void restore(String previous) {
        if (previous == null) {
            MDC.remove(KEY);
        } else {
            MDC.put(KEY, previous);
        }
    }
}
