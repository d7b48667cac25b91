package dev.ripcord.gateway.auth;

import java.time.Duration;
import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code ripcord.gateway.auth.*}: who may call {@code /v1/**}, and how much each caller may ask for.
 *
 * @param enabled               require {@code Authorization: Bearer <key>} on {@code /v1/**} (default true); false runs
 *                              the gateway open, every caller being {@value ApiKeys#ANONYMOUS}, with a loud warning
 * @param apiKeyHashes          the accepted keys, as {@code sha256:<64 lowercase hex>} of each key (env
 *                              {@code RIPCORD_GATEWAY_AUTH_API_KEY_HASHES}, comma-separated); required when enabled
 * @param maxConcurrentStreams  completions in flight at once per key (streamed or not); one more gets 429
 * @param rateLimit             completions started per key and period; more get 429 with {@code Retry-After}
 */
@ConfigurationProperties("ripcord.gateway.auth")
public record AuthProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue List<String> apiKeyHashes,
        @DefaultValue("64") int maxConcurrentStreams,
        @DefaultValue RateLimit rateLimit) {

    static final String PREFIX = "ripcord.gateway.auth.";

    public AuthProperties {
        apiKeyHashes = List.copyOf(apiKeyHashes);
        for (int i = 0; i < apiKeyHashes.size(); i++) {
            String hash = apiKeyHashes.get(i).strip();
            if (!ApiKeys.isHash(hash)) {
                // Never echo the value: an operator who pasted a key instead of its hash must not find it in a log.
                throw new IllegalArgumentException(("%sapi-key-hashes[%d] must be sha256:<64 lowercase hex> (the "
                        + "SHA-256 of the key, e.g. from ./ripcord hash-key <key>); got a value of %d characters")
                        .formatted(PREFIX, i, hash.length()));
            }
        }
        apiKeyHashes = apiKeyHashes.stream().map(String::strip).toList();
        if (enabled && apiKeyHashes.isEmpty()) {
            throw new IllegalArgumentException(("%senabled is true but no %sapi-key-hashes are configured, so no "
                    + "client could call /v1: configure at least one (sha256:<hex>; ./ripcord hash-key <key> prints "
                    + "it; env RIPCORD_GATEWAY_AUTH_API_KEY_HASHES), or set %senabled=false to run open")
                    .formatted(PREFIX, PREFIX, PREFIX));
        }
        if (maxConcurrentStreams < 1) {
            throw new IllegalArgumentException(PREFIX + "max-concurrent-streams must be at least 1, got "
                    + maxConcurrentStreams);
        }
    }

    /**
     * {@code ripcord.gateway.auth.rate-limit.*}: a Resilience4j rate limiter per key identity.
     *
     * @param enabled            whether completions are rate-limited at all (default true)
     * @param limitForPeriod     completions a key may start per period (default 100)
     * @param limitRefreshPeriod the period (default 1s)
     */
    public record RateLimit(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("100") int limitForPeriod,
            @DefaultValue("1s") Duration limitRefreshPeriod) {

        public RateLimit {
            if (limitForPeriod < 1) {
                throw new IllegalArgumentException(PREFIX + "rate-limit.limit-for-period must be at least 1, got "
                        + limitForPeriod);
            }
            if (limitRefreshPeriod.compareTo(Duration.ofMillis(1)) < 0) {
                throw new IllegalArgumentException(PREFIX + "rate-limit.limit-refresh-period must be at least 1ms, "
                        + "got " + limitRefreshPeriod);
            }
        }
    }
}
