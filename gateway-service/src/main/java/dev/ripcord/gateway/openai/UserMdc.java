package dev.ripcord.gateway.openai;

import io.micrometer.context.ThreadLocalAccessor;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;
import reactor.util.context.Context;

/**
 * Carries the OpenAI {@code user} field (the client's opaque end-user ID) into the MDC key {@value #KEY} of every
 * log line about the generation, as {@code RequestIdThreadLocalAccessor} does for the request ID: the edge writes it
 * into the Reactor context under {@value #KEY}, and Reactor's automatic context propagation sets the MDC from it on
 * every hop. Values are cut to {@value #MAX_LENGTH} characters: a log field, not a store.
 *
 * <p>Registered through {@code META-INF/services/io.micrometer.context.ThreadLocalAccessor}. Public only because
 * {@link java.util.ServiceLoader} instantiates it.
 */
public final class UserMdc implements ThreadLocalAccessor<String> {

    /** Reactor context key and MDC key. */
    public static final String KEY = "user";
    static final int MAX_LENGTH = 64;

    /** {@code context} with the user (shortened) under {@value #KEY}; unchanged when there is none. */
    static Context put(Context context, @Nullable String user) {
        if (user == null || user.isEmpty()) {
            return context;
        }
        return context.put(KEY, user.length() <= MAX_LENGTH ? user : user.substring(0, MAX_LENGTH));
    }

    @Override
    public Object key() {
        return KEY;
    }

    @Override
    public @Nullable String getValue() {
        return MDC.get(KEY);
    }

    @Override
    public void setValue(String value) {
        MDC.put(KEY, value);
    }

    @Override
    public void setValue() {
        MDC.remove(KEY);
    }

    @Override
    public void restore(@Nullable String previousValue) {
        if (previousValue == null) {
            MDC.remove(KEY);
        } else {
            MDC.put(KEY, previousValue);
        }
    }

    @Override
    public void restore() {
        MDC.remove(KEY);
    }
}
