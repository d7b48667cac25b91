package dev.ripcord.stack;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The credentials of one local stack, generated fresh at every start: an API key for the gateway's {@code /v1}
 * (unless the stack runs open) and the internal token the gateway and the workers share.
 *
 * <p>They reach the services through environment variables ({@code RIPCORD_GATEWAY_AUTH_API_KEY_HASHES},
 * {@code RIPCORD_INTERNAL_TOKEN}), never the command line, where any local user could read them with {@code ps}.
 * The gateway gets only the key's hash.
 *
 * @param apiKey        the generated API key ({@code rk-} + 32 random bytes, base64url), or null when open
 * @param apiKeyHashes  every hash the gateway accepts: the generated key's, then any given with
 *                      {@code --ripcord.gateway.auth.api-key-hashes}
 * @param internalToken the internal token (generated, or the one given with {@code --ripcord.internal.token})
 */
public record StackCredentials(String apiKey, List<String> apiKeyHashes, String internalToken) {

    static final String AUTH_ENABLED = "ripcord.gateway.auth.enabled";
    static final String API_KEY_HASHES = "ripcord.gateway.auth.api-key-hashes";
    static final String INTERNAL_TOKEN = "ripcord.internal.token";

    private static final SecureRandom RANDOM = new SecureRandom();

    public StackCredentials {
        apiKeyHashes = List.copyOf(apiKeyHashes);
    }

    /** Whether the gateway requires an API key. */
    public boolean authEnabled() {
        return apiKey != null;
    }

    /**
     * Credentials for a stack started with {@code properties}: open if they say
     * {@code ripcord.gateway.auth.enabled=false}, else a new key (plus any hashes they list); the token they give, or
     * a new one.
     */
    static StackCredentials generate(Map<String, String> properties) {
        boolean open = "false".equalsIgnoreCase(properties.getOrDefault(AUTH_ENABLED, "true").strip());
        List<String> hashes = new ArrayList<>();
        String key = null;
        if (!open) {
            key = "rk-" + random(32);
            hashes.add(hash(key));
        }
        String extra = properties.get(API_KEY_HASHES);
        if (extra != null) {
            for (String hash : extra.split(",")) {
                if (!hash.isBlank()) {
                    hashes.add(hash.strip());
                }
            }
        }
        String token = properties.get(INTERNAL_TOKEN);
        if (token == null || token.isBlank()) {
            token = random(32);
        }
        return new StackCredentials(key, hashes, token);
    }

    /** The properties to pass on the command line: all but the ones these credentials carry by environment. */
    static Map<String, String> withoutSecrets(Map<String, String> properties) {
        Map<String, String> rest = new LinkedHashMap<>(properties);
        rest.remove(API_KEY_HASHES);
        rest.remove(INTERNAL_TOKEN);
        return rest;
    }

    /** The environment of a service of this stack. */
    Map<String, String> environment(Role role) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RIPCORD_INTERNAL_TOKEN", internalToken);
        if (role == Role.GATEWAY && !apiKeyHashes.isEmpty()) {
            env.put("RIPCORD_GATEWAY_AUTH_API_KEY_HASHES", String.join(",", apiKeyHashes));
        }
        return env;
    }

    /** A new API key, as a stack generates them (for tests that need a second key). */
    public static String newApiKey() {
        return "rk-" + random(32);
    }

    /** {@code sha256:<hex>} of a key: what the gateway is configured with. */
    public static String hash(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    private static String random(int bytes) {
        byte[] b = new byte[bytes];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** Never prints the key or the token. */
    @Override
    public String toString() {
        return "StackCredentials[auth " + (authEnabled() ? "on" : "OFF") + ", " + apiKeyHashes.size() + " key hash(es)]";
    }
}
