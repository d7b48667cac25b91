package dev.ripcord.gateway.auth;

import java.time.Duration;
import java.util.Optional;

import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.gateway.openai.ApiException;
import dev.ripcord.gateway.openai.ErrorCode;
import dev.ripcord.gateway.openai.RequestIdFilter;
import dev.ripcord.protocol.RequestPaths;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The gate in front of {@code /v1/**}, {@code /tokenize} and {@code /detokenize}, in order:
 *
 * <ol>
 *   <li><b>Authenticate</b>: {@code Authorization: Bearer <key>} must hash to a configured hash
 *       ({@link ApiKeyVerifier}, constant time); else 401 {@code invalid_api_key} with {@code WWW-Authenticate:
 *       Bearer}. With authentication disabled every caller is {@value ApiKeys#ANONYMOUS}. The identity is put on the
 *       exchange and in the Reactor context ({@value ApiKeys#ATTRIBUTE}): the request's owner from here on.</li>
 *   <li><b>Rate-limit</b> completions ({@code POST /v1/completions}, {@code /v1/chat/completions}) per identity:
 *       429 {@code rate_limit_exceeded} with {@code Retry-After}.</li>
 *   <li><b>Bound concurrency</b>: a completion takes one of its key's {@code max-concurrent-streams} permits, or gets
 *       429 {@code concurrency_limit_exceeded}; the permit is released exactly once when the response ends, whether
 *       it finished, failed or the client went away.</li>
 * </ol>
 *
 * Before any of these, a path with more than one reading ({@code ;params}, an escaped letter or separator, a dot or
 * empty segment: {@link RequestPaths#canonical}) is refused with 400 {@code invalid_path}, on every route, and the
 * gate is decided on the decoded path the router matches, so no spelling of {@code /v1/...} reaches a handler
 * without a key.
 *
 * <p>Cancels ({@code POST /v1/requests/{id}/cancel}) are authenticated but never limited: a cancel frees capacity.
 * Everything else (actuator, vLLM's open {@code /health} and {@code /version}) passes untouched. Rejections are errors rendered by the OpenAI error handler, so they
 * carry the OpenAI body; their {@code X-Request-Id} is the one {@link RequestIdFilter} (which runs before this filter)
 * gave the request. Never blocks; never logs a key, only identities.
 */
public final class ApiKeyFilter implements WebFilter, Ordered {

    /** Early, so no other /v1 work happens for an unauthenticated request; after {@link RequestIdFilter#ORDER}. */
    public static final int ORDER = RequestIdFilter.ORDER + 100;

    private static final Logger log = LoggerFactory.getLogger(ApiKeyFilter.class);
    private static final String BEARER = "Bearer ";
    private static final Duration CONCURRENCY_RETRY_AFTER = Duration.ofSeconds(1);

    private final boolean enabled;
    private final ApiKeyVerifier verifier;
    private final RateLimits rateLimits;
    private final StreamPermits permits;

    ApiKeyFilter(boolean enabled, ApiKeyVerifier verifier, RateLimits rateLimits, StreamPermits permits) {
        this.enabled = enabled;
        this.verifier = verifier;
        this.rateLimits = rateLimits;
        this.permits = permits;
    }

    /** The per-key concurrency permits (for tests and diagnostics). */
    StreamPermits permits() {
        return permits;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        ServerHttpRequest request = exchange.getRequest();
        Optional<String> canonical = RequestPaths.canonical(request.getPath().value());
        if (canonical.isEmpty()) {
            return reject(exchange, null, ApiException.of(ErrorCode.INVALID_PATH, null,
                    "The request path is ambiguous (a ';', an escaped letter, digit or separator, a '.' or '..' "
                            + "segment, or an empty segment); send the plain path, e.g. /v1/completions."));
        }
        String path = canonical.get();
        if (!isGated(path)) {
            return chain.filter(exchange);
        }
        String identity;
        if (enabled) {
            Optional<String> authenticated = bearer(request.getHeaders().getFirst(HttpHeaders.AUTHORIZATION))
                    .flatMap(verifier::identify);
            if (authenticated.isEmpty()) {
                return reject(exchange, null, unauthorized(request));
            }
            identity = authenticated.get();
        } else {
            identity = ApiKeys.ANONYMOUS;
        }
        exchange.getAttributes().put(ApiKeys.ATTRIBUTE, identity);
        Mono<Void> next = isCompletion(request, path) ? limited(exchange, chain, identity) : chain.filter(exchange);
        return next.contextWrite(context -> context.put(ApiKeys.ATTRIBUTE, identity));
    }

    private Mono<Void> limited(ServerWebExchange exchange, WebFilterChain chain, String identity) {
        return Mono.defer(() -> {
            Duration wait = rateLimits.tryAcquire(identity);
            if (wait != null) {
                return reject(exchange, identity, new ApiException(ErrorCode.RATE_LIMIT_EXCEEDED, null,
                        "Rate limit reached for this API key; retry after the time in Retry-After.", wait, null));
            }
            StreamPermits.Permit permit = permits.tryAcquire(identity);
            if (permit == null) {
                return reject(exchange, identity, new ApiException(ErrorCode.CONCURRENCY_LIMIT_EXCEEDED, null,
                        ("This API key already has %d completions in flight, the most allowed at once; retry when "
                                + "one has finished.").formatted(permits.max()), CONCURRENCY_RETRY_AFTER, null));
            }
            // Subscribed in this same call, so doFinally is in place before anything can end the exchange.
            return chain.filter(exchange).doFinally(signal -> permit.release());
        });
    }

    /**
     * The OpenAI surface and vLLM's tokenizer endpoints need a key; health, version and actuator do not. Decided on
     * the decoded path the router matches ({@link RequestPaths#canonical}), never on the raw one.
     */
    static boolean isGated(String path) {
        return RequestPaths.isUnder(path, "/v1") || RequestPaths.isUnder(path, "/tokenize")
                || RequestPaths.isUnder(path, "/detokenize");
    }

    private static boolean isCompletion(ServerHttpRequest request, String path) {
        return request.getMethod() == HttpMethod.POST
                && (path.equals("/v1/completions") || path.equals("/v1/chat/completions"));
    }

    static Optional<String> bearer(@Nullable String header) {
        if (header == null || header.length() <= BEARER.length()
                || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return Optional.empty();
        }
        String key = header.substring(BEARER.length()).strip();
        return key.isEmpty() ? Optional.empty() : Optional.of(key);
    }

    private static ApiException unauthorized(ServerHttpRequest request) {
        boolean missing = request.getHeaders().getFirst(HttpHeaders.AUTHORIZATION) == null;
        return new Unauthorized(missing
                ? "You didn't provide an API key. Send it in an Authorization header using Bearer auth "
                        + "(Authorization: Bearer YOUR_KEY); ./ripcord up prints one."
                : "Incorrect API key provided.");
    }

    /** Fails the exchange with {@code error}, rendered by the OpenAI error handler. */
    private static Mono<Void> reject(ServerWebExchange exchange, @Nullable String identity, ApiException error) {
        String requestId = RequestIdFilter.requestId(exchange);
        RequestMdc.with(requestId, () -> log.debug("requestId={} apiKey={} rejected: {} {}", requestId,
                identity == null ? "-" : identity, error.getStatusCode().value(), error.errorCode().code()));
        return Mono.error(error);
    }

    /** A 401 that tells the client how to authenticate. */
    static final class Unauthorized extends ApiException {
        private static final long serialVersionUID = 1L;

        Unauthorized(String message) {
            super(ErrorCode.INVALID_API_KEY, null, message, null, null);
        }

        @Override
        public HttpHeaders getHeaders() {
            HttpHeaders headers = super.getHeaders();
            headers.set(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"ripcord\"");
            return headers;
        }
    }
}
