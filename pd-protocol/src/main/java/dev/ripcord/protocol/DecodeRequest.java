package dev.ripcord.protocol;

/**
 * Gateway → decode: reserve KV for a prompt of {@code promptTokens} tokens plus up to {@code maxTokens} generated
 * ones, open a receive session for the prompt's KV, then decode once prefill's done notification lands.
 *
 * @param ignoreEos keep generating past the end-of-sequence token until {@code maxTokens}
 */
public record DecodeRequest(String requestId, int promptTokens, int maxTokens, Sampling sampling,
                            boolean ignoreEos) {
}
