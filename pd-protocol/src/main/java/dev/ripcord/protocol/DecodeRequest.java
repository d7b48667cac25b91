package dev.ripcord.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * Gateway → decode: reserve KV for a prompt of {@code promptTokens} tokens plus up to {@code maxTokens} generated
 * ones, open a receive session for the prompt's KV, then decode once prefill's done notification lands.
 *
 * @param ignoreEos    keep generating past the end-of-sequence token until {@code maxTokens}
 * @param stopTokenIds further tokens that end the generation like EOS (finish reason {@code stop}), also under
 *                     {@code ignoreEos}; null or empty: none
 * @param promptIds    the prompt's token ids, sent only when the sampling reads them
 *                     ({@link Sampling#readsPrompt()}); else null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record DecodeRequest(String requestId, int promptTokens, int maxTokens, Sampling sampling,
                            boolean ignoreEos, int[] stopTokenIds, int[] promptIds) {

    public DecodeRequest(String requestId, int promptTokens, int maxTokens, Sampling sampling, boolean ignoreEos) {
        this(requestId, promptTokens, maxTokens, sampling, ignoreEos, null, null);
    }
}
