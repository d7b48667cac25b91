package dev.ripcord.worker.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Optional;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.RequestPaths;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Guards a worker's {@code /internal/**}: the request must carry {@value InternalApi#INTERNAL_TOKEN_HEADER} equal to
 * {@code ripcord.internal.token} or to one of {@code ripcord.internal.previous-tokens} (a rotation in progress).
 * Missing: 401. Wrong: 403. The comparison is constant-time ({@link MessageDigest#isEqual} on SHA-256 digests, and
 * every accepted token is compared, so neither content, length nor which token matched leaks through timing).
 * Everything else, actuator included, passes untouched: health probes and Prometheus need no credential.
 *
 * <p>The decision is made on the decoded path the router matches, and a path with more than one reading
 * ({@code ;params}, an escaped letter or separator, a dot or empty segment: {@link RequestPaths#canonical}) is refused
 * with 400 {@code invalid_path} on every route, so no spelling of {@code /internal/...} reaches a handler without
 * the token.
 *
 * <p>Rejections answer a small JSON body {@code {"error":{"message","code"}}} and never echo the presented value.
 */
public final class InternalTokenFilter implements WebFilter, Ordered {

    public static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 100;

    private static final Logger log = LoggerFactory.getLogger(InternalTokenFilter.class);
    private static final String INTERNAL = "/internal";

    private final List<byte[]> accepted;

    public InternalTokenFilter(String token) {
        this(List.of(token));
    }

    /** @param tokens every token accepted: the current one and those of a rotation in progress; at least one */
    public InternalTokenFilter(List<String> tokens) {
        if (tokens.isEmpty()) {
            throw new IllegalArgumentException("an internal token filter needs at least one token");
        }
        this.accepted = tokens.stream().map(InternalTokenFilter::digest).toList();
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        Optional<String> path = RequestPaths.canonical(exchange.getRequest().getPath().value());
        if (path.isEmpty()) {
            return reject(exchange, HttpStatus.BAD_REQUEST, "invalid_path",
                    "The request path is ambiguous (a ';', an escaped letter, digit or separator, a '.' or '..' "
                            + "segment, or an empty segment).");
        }
        if (!RequestPaths.isUnder(path.get(), INTERNAL)) {
            return chain.filter(exchange);
        }
        String presented = exchange.getRequest().getHeaders().getFirst(InternalApi.INTERNAL_TOKEN_HEADER);
        if (presented == null) {
            return reject(exchange, HttpStatus.UNAUTHORIZED, "missing_internal_token",
                    "This internal endpoint requires the " + InternalApi.INTERNAL_TOKEN_HEADER + " header.");
        }
        if (!accepts(digest(presented))) {
            return reject(exchange, HttpStatus.FORBIDDEN, "invalid_internal_token",
                    "The " + InternalApi.INTERNAL_TOKEN_HEADER + " header does not hold this worker's token.");
        }
        return chain.filter(exchange);
    }

    private boolean accepts(byte[] presented) {
        boolean match = false;
        for (byte[] token : accepted) {
            match |= MessageDigest.isEqual(token, presented); // no short cut: every token is compared
        }
        return match;
    }

    private static Mono<Void> reject(ServerWebExchange exchange, HttpStatus status, String code, String message) {
        String requestId = exchange.getRequest().getHeaders().getFirst(RequestIds.HEADER);
        log.warn("requestId={} {} {} refused: {} from {}", requestId == null ? "-" : requestId,
                exchange.getRequest().getMethod(), exchange.getRequest().getPath().value(), code,
                exchange.getRequest().getRemoteAddress());
        ServerHttpResponse response = exchange.getResponse();
        response.setStatusCode(status);
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        if (status == HttpStatus.UNAUTHORIZED) {
            response.getHeaders().set(HttpHeaders.WWW_AUTHENTICATE, InternalApi.INTERNAL_TOKEN_HEADER);
        }
        byte[] body = ("{\"error\":{\"message\":\"" + message + "\",\"code\":\"" + code + "\"}}")
                .getBytes(StandardCharsets.UTF_8);
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }

    private static byte[] digest(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
