package dev.ripcord.gateway.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;
import org.springframework.web.server.ServerWebExchange;
import reactor.util.context.ContextView;

/**
 * API keys as the gateway sees them: never stored, only their SHA-256 hash ({@code sha256:<64 lowercase hex>}),
 * and an <em>identity</em> derived from that hash, {@code key-} + its first 12 hex digits, which is what logs,
 * metrics, rate-limit buckets and request ownership name. A key itself is never logged.
 *
 * <p>The identity of the authenticated caller travels with the request under {@value #ATTRIBUTE}: as an exchange
 * attribute and in the Reactor context. When authentication is disabled every caller is {@value #ANONYMOUS}.
 */
public final class ApiKeys {

    /** Exchange attribute and Reactor context key holding the caller's identity. */
    public static final String ATTRIBUTE = "ripcord.apiKey";
    /** The identity of every caller when {@code ripcord.gateway.auth.enabled=false}. */
    public static final String ANONYMOUS = "anonymous";
    /** How a configured hash starts. */
    public static final String HASH_PREFIX = "sha256:";

    private static final Pattern HASH = Pattern.compile("sha256:[0-9a-f]{64}");
    private static final int IDENTITY_HEX = 12;

    private ApiKeys() {
    }

    /** The caller's identity in a Reactor context, {@value #ANONYMOUS} if none was put there. */
    public static String identity(ContextView context) {
        return context.getOrDefault(ATTRIBUTE, ANONYMOUS);
    }

    /** The caller's identity on an exchange, {@value #ANONYMOUS} if none was set. */
    public static String identity(ServerWebExchange exchange) {
        String identity = exchange.getAttribute(ATTRIBUTE);
        return identity == null ? ANONYMOUS : identity;
    }

    /** {@code sha256:<hex>} of {@code key}'s UTF-8 bytes: what an operator configures for it. */
    public static String hash(String key) {
        return HASH_PREFIX + HexFormat.of().formatHex(sha256(key));
    }

    /** Whether {@code value} is a well-formed configured hash. */
    public static boolean isHash(@Nullable String value) {
        return value != null && HASH.matcher(value).matches();
    }

    /** The identity of the key with this configured hash: {@code key-} and the first 12 hex digits. */
    public static String identityOfHash(String hash) {
        if (!isHash(hash)) {
            throw new IllegalArgumentException("not a sha256:<64 lowercase hex> hash");
        }
        return "key-" + hash.substring(HASH_PREFIX.length(), HASH_PREFIX.length() + IDENTITY_HEX);
    }

    static byte[] sha256(String key) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** Prints the hash of the key given as the only argument (or read from stdin): {@code ./ripcord hash-key}. */
    public static void main(String[] args) throws java.io.IOException {
        String key = args.length > 0 ? args[0]
                : new String(System.in.readAllBytes(), StandardCharsets.UTF_8).strip();
        if (key.isEmpty()) {
            System.err.println("usage: ApiKeys <key>   (or the key on stdin)");
            System.exit(2);
        }
        String hash = hash(key);
        System.out.println(hash);
        System.err.println("identity: " + identityOfHash(hash));
    }
}
