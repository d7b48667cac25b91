package dev.ripcord.gateway.openai;

import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.protocol.RequestIds;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * Where every request's identity is born, the first filter of the gateway, for every path:
 *
 * <ul>
 *   <li>a valid client {@value RequestIds#HEADER} ({@link RequestIds#isValid}: 1 to 128 characters of
 *       {@code [A-Za-z0-9._:-]}) is the request's ID;</li>
 *   <li>none: a new one, {@link RequestIds#newId()} ({@value RequestIds#GENERATED_PATTERN});</li>
 *   <li>an invalid one is refused, never silently replaced (a client that names its request means to find it by that
 *       name): 400 {@code invalid_request_id} with {@code param} {@value RequestIds#HEADER}; that answer carries a
 *       new ID, so even it can be quoted.</li>
 * </ul>
 *
 * The ID is set, before anything else can fail, on the response header, on the exchange
 * ({@value RequestIds#EXCHANGE_ATTRIBUTE}, where the error handler finds it) and in the Reactor context of the rest of
 * the chain ({@value RequestIds#CONTEXT_KEY}, bridged to the logging MDC). Being first, it runs before authentication,
 * so a 401 or 429 carries the ID too. The gateway forwards the same ID to the workers on every internal call.
 */
public final class RequestIdFilter implements WebFilter, Ordered {

    /** First of all filters: everything after it, the auth filter included, can rely on the ID. */
    public static final int ORDER = Ordered.HIGHEST_PRECEDENCE;

    private static final Logger log = LoggerFactory.getLogger(RequestIdFilter.class);

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        String client = exchange.getRequest().getHeaders().getFirst(RequestIds.HEADER);
        boolean valid = client != null && RequestIds.isValid(client);
        String requestId = valid ? client : RequestIds.newId();
        exchange.getAttributes().put(RequestIds.EXCHANGE_ATTRIBUTE, requestId);
        exchange.getResponse().getHeaders().set(RequestIds.HEADER, requestId);
        if (client != null && !valid) {
            RequestMdc.with(requestId, () -> log.debug("requestId={} refused the client's {}: {}", requestId,
                    RequestIds.HEADER, RequestIds.problemWith(client)));
            return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, RequestIds.HEADER,
                    "Invalid %s header: expected %s.", RequestIds.HEADER, RequestIds.RULE));
        }
        return chain.filter(exchange).contextWrite(Context.of(RequestIds.CONTEXT_KEY, requestId));
    }

    /** The request ID of {@code exchange}, as this filter settled it. */
    public static String requestId(ServerWebExchange exchange) {
        return exchange.getRequiredAttribute(RequestIds.EXCHANGE_ATTRIBUTE);
    }
}
