package dev.ripcord.gateway.auth;

import dev.ripcord.protocol.InternalApi;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * Adds the internal credential ({@value InternalApi#INTERNAL_TOKEN_HEADER}: {@code ripcord.internal.token}) to
 * every call a Boot-built {@link WebClient} makes to a path under {@code /internal/}, and to nothing else, so the
 * token never reaches a host that is not a worker's internal API.
 *
 * <p>A {@link WebClientCustomizer}: it applies to every client built from the auto-configured
 * {@code WebClient.Builder}, which the gateway's worker client is (contract C3).
 */
final class InternalCredentials implements WebClientCustomizer {

    private static final String INTERNAL_PREFIX = "/internal/";

    private final @Nullable String token;

    /** @param token the shared token; null or blank adds nothing (workers with internal auth then answer 401) */
    InternalCredentials(@Nullable String token) {
        this.token = token == null || token.isBlank() ? null : token;
    }

    boolean hasToken() {
        return token != null;
    }

    @Override
    public void customize(WebClient.Builder builder) {
        if (token != null) {
            builder.filter(filter(token));
        }
    }

    static ExchangeFilterFunction filter(String token) {
        return (request, next) -> {
            String path = request.url().getRawPath();
            if (path == null || !path.startsWith(INTERNAL_PREFIX)) {
                return next.exchange(request);
            }
            return next.exchange(ClientRequest.from(request)
                    .headers(headers -> headers.set(InternalApi.INTERNAL_TOKEN_HEADER, token))
                    .build());
        };
    }
}
