package dev.ripcord.protocol.prefix;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

/**
 * The keys of a prompt's complete KV pages, the same in every service: a prefill worker files its cached pages
 * under them and a gateway routes by them.
 *
 * <p>Keys are chained: {@code key(i) = H(key(i-1), tokens of page i)}, and {@code key(-1)} is a seed derived from
 * the model's identity ({@code Pairing.modelIdentity}), the page size and the request's optional
 * {@code cache_salt}, so two prompts share a key only when they share every token before the page's end, the
 * model, the page size and the salt. {@code H} is SHA-256 cut to its first 64 bits: a collision is not a
 * practical concern for routing, and a worker also compares the page's token IDs on every hit, so a collision
 * can never serve another prompt's KV.
 *
 * <p>Only complete pages have keys: a prompt of {@code n} tokens has {@code n / pageTokens} of them.
 */
public final class PrefixKeys {
    private static final byte[] DOMAIN = "ripcord-prefix-v1".getBytes(StandardCharsets.UTF_8);

    private PrefixKeys() {
    }

    /** The seed that {@link #keys} chains from, for a model, a page size and a salt (null or empty: none). */
    public static long seed(String modelIdentity, int pageTokens, String cacheSalt) {
        Objects.requireNonNull(modelIdentity, "modelIdentity");
        if (pageTokens <= 0) {
            throw new IllegalArgumentException("pageTokens must be positive, got " + pageTokens);
        }
        MessageDigest sha = sha256();
        sha.update(DOMAIN);
        update(sha, modelIdentity);
        sha.update(ByteBuffer.allocate(4).putInt(pageTokens).array());
        update(sha, cacheSalt == null ? "" : cacheSalt);
        return ByteBuffer.wrap(sha.digest()).getLong();
    }

    /**
     * The keys of the complete pages of {@code tokens[0..length)}, {@code length / pageTokens} of them, chained
     * from {@code seed} ({@link #seed}).
     */
    public static long[] keys(long seed, int pageTokens, int[] tokens, int length) {
        if (pageTokens <= 0) {
            throw new IllegalArgumentException("pageTokens must be positive, got " + pageTokens);
        }
        if (length < 0 || length > tokens.length) {
            throw new IllegalArgumentException("length " + length + " outside 0.." + tokens.length);
        }
        long[] keys = new long[length / pageTokens];
        ByteBuffer page = ByteBuffer.allocate(8 + 4 * pageTokens);
        MessageDigest sha = sha256();
        long parent = seed;
        for (int i = 0; i < keys.length; i++) {
            page.clear();
            page.putLong(parent);
            for (int t = i * pageTokens, end = t + pageTokens; t < end; t++) {
                page.putInt(tokens[t]);
            }
            sha.update(page.array(), 0, page.position());
            parent = ByteBuffer.wrap(sha.digest()).getLong();
            keys[i] = parent;
        }
        return keys;
    }

    /** {@link #keys} of the whole array. */
    public static long[] keys(long seed, int pageTokens, int[] tokens) {
        return keys(seed, pageTokens, tokens, tokens.length);
    }

    private static void update(MessageDigest sha, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        sha.update(bytes);
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JDK", e);
        }
    }
}
