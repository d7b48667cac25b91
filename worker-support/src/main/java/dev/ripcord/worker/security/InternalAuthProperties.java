package dev.ripcord.worker.security;

import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code ripcord.internal.*}: the credentials a worker accepts on its {@code /internal/**} API.
 *
 * @param token          the shared token callers must send in {@code X-Ripcord-Internal-Token} (env
 *                       {@code RIPCORD_INTERNAL_TOKEN}); the gateway sends this one
 * @param previousTokens tokens a worker still accepts besides {@code token} (env
 *                       {@code RIPCORD_INTERNAL_PREVIOUS_TOKENS}, comma-separated; default none), so that a rotation
 *                       is two rollouts with no refused request: workers first accept the new token and the old
 *                       one while gateways still send the old one, then the old one is dropped
 *                       ({@code docs/security.md}). Blank entries are ignored
 * @param auth           {@code ripcord.internal.auth.enabled} (default true): false serves {@code /internal/**} to
 *                       anyone, with a loud warning, and only then may the token be absent
 */
@ConfigurationProperties("ripcord.internal")
public record InternalAuthProperties(@Nullable String token, @DefaultValue List<String> previousTokens,
                                     @DefaultValue Auth auth) {

    public InternalAuthProperties {
        if (token != null && token.isBlank()) {
            token = null;
        }
        previousTokens = previousTokens.stream().filter(t -> t != null && !t.isBlank()).map(String::strip)
                .distinct().toList();
        if (auth.enabled() && token == null) {
            throw new IllegalArgumentException("ripcord.internal.token is not set, so no caller could use this "
                    + "worker's /internal API: set the token shared with the gateway (env RIPCORD_INTERNAL_TOKEN), or "
                    + "set ripcord.internal.auth.enabled=false to serve it without a credential");
        }
        if (token == null && !previousTokens.isEmpty()) {
            throw new IllegalArgumentException("ripcord.internal.previous-tokens is set but ripcord.internal.token is "
                    + "not: a rotation keeps the old token in previous-tokens next to the new one in token");
        }
    }

    /** Every token the worker accepts: {@code token} first, then {@code previousTokens}; empty without a token. */
    public List<String> acceptedTokens() {
        if (token == null) {
            return List.of();
        }
        return java.util.stream.Stream.concat(java.util.stream.Stream.of(token), previousTokens.stream())
                .distinct().toList();
    }

    /** @param enabled whether {@code /internal/**} requires the token */
    public record Auth(@DefaultValue("true") boolean enabled) {
    }
}
