package dev.ripcord.cancel.logging;

import io.micrometer.context.ThreadLocalAccessor;
import org.slf4j.MDC;

/**
 * Bridges the request ID between a Reactor {@code Context} and the logging MDC, both under {@value RequestMdc#KEY}.
 *
 * <p>Design note: request handling in WebFlux hops threads (a Netty event loop, the parallel scheduler, the
 * engine loop completing a future, a WebClient response on a client event loop), and the MDC is a thread-local, so
 * a value put there once is lost at the first hop or, worse, left behind for the next request on that thread. The
 * Reactor context travels with the subscription instead. With automatic context propagation on
 * ({@code spring.reactor.context-propagation=auto}, i.e. {@code Hooks.enableAutomaticContextPropagation()}),
 * Reactor uses the registered accessors to set the thread-locals from the context around every signal it delivers
 * across such a hop (including cancellation, which is what a client disconnect is) and to restore the previous
 * values afterwards. So a pipeline only has to {@code contextWrite(Context.of("requestId", id))} at its edge.
 *
 * <p>Registered through {@code META-INF/services/io.micrometer.context.ThreadLocalAccessor}, which
 * {@code ContextRegistry.getInstance()} loads: every service that has this library has the bridge. The request ID is
 * kept apart from tracing baggage on purpose: it must be in every log line whether or not tracing is on, sampled
 * or exported.
 */
public final class RequestIdThreadLocalAccessor implements ThreadLocalAccessor<String> {

    @Override
    public Object key() {
        return RequestMdc.KEY;
    }

    @Override
    public String getValue() {
        return MDC.get(RequestMdc.KEY);
    }

    @Override
    public void setValue(String value) {
        MDC.put(RequestMdc.KEY, value);
    }

    @Override
    public void setValue() {
        MDC.remove(RequestMdc.KEY);
    }

    @Override
    public void restore(String previousValue) {
        RequestMdc.restore(previousValue);
    }

    @Override
    public void restore() {
        MDC.remove(RequestMdc.KEY);
    }
}
