package dev.ripcord.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * Gateway → prefill: compute the KV cache of {@code tokens} chunk by chunk, push each chunk's pages into the
 * receive region described by {@code transfer}, then sample the first token and send it with the done
 * notification. {@code pairing}: the decode worker's {@link Pairing} (from its {@code RESERVED}), which the
 * prefill worker refuses with 409 {@link Failed#PAIRING_MISMATCH} unless it is its own; null: not checked.
 * {@code cacheSalt}: the client's {@code cache_salt}, which seeds the prompt's prefix-cache keys
 * ({@link dev.ripcord.protocol.prefix.PrefixKeys#seed}) so only requests with the same salt share cached pages;
 * null: none.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PrefillRequest(String requestId, int[] tokens, Sampling sampling, String transfer, Pairing pairing,
        String cacheSalt) {

    public PrefillRequest(String requestId, int[] tokens, Sampling sampling, String transfer, Pairing pairing) {
        this(requestId, tokens, sampling, transfer, pairing, null);
    }

    public PrefillRequest(String requestId, int[] tokens, Sampling sampling, String transfer) {
        this(requestId, tokens, sampling, transfer, null);
    }
}
