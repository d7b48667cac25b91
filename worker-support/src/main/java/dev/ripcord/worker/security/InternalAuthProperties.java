package dev.ripcord.worker.security;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code ripcord.internal.*}: the credential a worker requires on its {@code /internal/**} API.
 *
 * @param token the shared token callers must send in {@code X-Ripcord-Internal-Token} (env
 *              {@code RIPCORD_INTERNAL_TOKEN}); the same value on the gateway and every worker
 * @param auth  {@code ripcord.internal.auth.enabled} (default true): false serves {@code /internal/**} to anyone,
 *              with a loud warning, and only then may the token be absent
 */
@ConfigurationProperties("ripcord.internal")
public record InternalAuthProperties(@Nullable String token, @DefaultValue Auth auth) {

    public InternalAuthProperties {
        if (token != null && token.isBlank()) {
            token = null;
        }
        if (auth.enabled() && token == null) {
            throw new IllegalArgumentException("ripcord.internal.token is not set, so no caller could use this "
                    + "worker's /internal API: set the token shared with the gateway (env RIPCORD_INTERNAL_TOKEN), or "
                    + "set ripcord.internal.auth.enabled=false to serve it without a credential");
        }
    }

    /** @param enabled whether {@code /internal/**} requires the token */
    public record Auth(@DefaultValue("true") boolean enabled) {
    }
}
