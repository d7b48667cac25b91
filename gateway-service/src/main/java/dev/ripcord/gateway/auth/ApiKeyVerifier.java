package dev.ripcord.gateway.auth;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Checks a presented key against the configured hashes.
 *
 * <p>Design note: the presented key is hashed once and compared with <em>every</em> configured hash by
 * {@link MessageDigest#isEqual} (constant time in the digest's content), without stopping at the first match, so
 * the time a check takes says nothing about which hash, or how much of one, matched. Hashing first also makes the
 * compared length fixed (32 bytes) whatever the length of the presented key.
 */
final class ApiKeyVerifier {

    private record Entry(byte[] digest, String identity) {
    }

    private final List<Entry> entries;

    /** @param hashes {@code sha256:<hex>} strings, already validated */
    ApiKeyVerifier(List<String> hashes) {
        Map<String, String> identities = new LinkedHashMap<>();
        List<Entry> list = new ArrayList<>();
        for (String hash : hashes) {
            String identity = ApiKeys.identityOfHash(hash);
            String previous = identities.putIfAbsent(identity, hash);
            if (previous != null) {
                if (previous.equals(hash)) {
                    continue; // the same key listed twice is harmless
                }
                throw new IllegalArgumentException("two ripcord.gateway.auth.api-key-hashes share the identity "
                        + identity + " (the first 12 hex digits); generate another key");
            }
            list.add(new Entry(HexFormat.of().parseHex(hash.substring(ApiKeys.HASH_PREFIX.length())), identity));
        }
        this.entries = List.copyOf(list);
    }

    /** The identity of the configured key equal to {@code presented}, or empty. */
    Optional<String> identify(String presented) {
        byte[] digest = ApiKeys.sha256(presented);
        String match = null;
        for (Entry entry : entries) {
            if (MessageDigest.isEqual(entry.digest(), digest)) {
                match = entry.identity();
            }
        }
        return Optional.ofNullable(match);
    }

    int size() {
        return entries.size();
    }
}
