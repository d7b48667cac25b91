package dev.ripcord.worker;

import dev.ripcord.protocol.RequestIds;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * The worker's edge: the request ID the gateway sends on every internal call ({@value RequestIds#HEADER}) goes on
 * the exchange ({@value RequestIds#EXCHANGE_ATTRIBUTE}) and into the Reactor context under
 * {@value RequestIds#CONTEXT_KEY}, for the whole exchange including the response stream. With automatic context
 * propagation that puts it in the MDC of every log line the handler, its operators and its cancel path write, on the
 * Netty event loop or wherever a signal arrives (see {@link dev.ripcord.cancel.logging.RequestIdThreadLocalAccessor}).
 * The engine loop is not a Reactor thread: there {@link RequestLogging} sets it.
 *
 * <p>Unlike the gateway's filter it never makes an ID up: a worker only serves the gateway, which always sends one.
 * A missing or invalid header (validated by {@link RequestIds}, the same rules as the gateway's) leaves the exchange
 * and the context alone; the handler rejects such a body anyway.
 */
public final class RequestIdWebFilter implements WebFilter, Ordered {

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        String id = exchange.getRequest().getHeaders().getFirst(RequestIds.HEADER);
        if (!RequestIds.isValid(id)) {
            return chain.filter(exchange);
        }
        exchange.getAttributes().put(RequestIds.EXCHANGE_ATTRIBUTE, id);
        return chain.filter(exchange).contextWrite(Context.of(RequestIds.CONTEXT_KEY, id));
    }

    /** First, so that every other filter's log lines carry the ID too. */
    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }
}
