package dev.ripcord.protocol;

/**
 * Gateway → prefill: compute the KV cache of {@code tokens} chunk by chunk, push each chunk's pages into the
 * receive region described by {@code transfer}, then sample the first token and send it with the done
 * notification.
 */
public record PrefillRequest(String requestId, int[] tokens, Sampling sampling, String transfer) {
}
