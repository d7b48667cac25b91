package dev.ripcord.gateway.observability;

import dev.ripcord.gateway.generation.WarmUp;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Marks a request that carries {@code X-Ripcord-Warm-Up: 1} (or {@code true}) as warm-up traffic ({@link WarmUp}),
 * for the rest of its exchange. Registered only where {@value WarmUp#ENABLED} is {@code true}.
 */
public final class WarmUpFilter implements WebFilter, Ordered {

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        String value = exchange.getRequest().getHeaders().getFirst(WarmUp.HEADER);
        if (value == null || !(value.equals("1") || value.equalsIgnoreCase("true"))) {
            return chain.filter(exchange);
        }
        return chain.filter(exchange).contextWrite(WarmUp.mark());
    }

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE + 10; // any place works: the context reaches the handler either way
    }
}
