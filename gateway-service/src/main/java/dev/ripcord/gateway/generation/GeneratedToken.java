package dev.ripcord.gateway.generation;

import dev.ripcord.protocol.Logprobs;
import org.jspecify.annotations.Nullable;

/**
 * One generated token from the decode worker, in order.
 *
 * @param index        position in the completion, from 0
 * @param tokenId      the token; an EOS token is delivered too (with {@code finishReason} {@code "stop"}) and the
 *                     detokenizer decides it renders as nothing
 * @param finishReason non-null only on the last token of a generation: {@link #STOP} (EOS) or {@link #LENGTH}
 *                     ({@code maxTokens} reached)
 * @param logprobs     the token's logprobs when the request asked for them ({@link SamplingOptions#logprobs()}), else
 *                     null
 */
public record GeneratedToken(int index, int tokenId, @Nullable String finishReason, @Nullable Logprobs logprobs) {

    /** The model emitted EOS (the gateway also reports this when a stop string matched). */
    public static final String STOP = "stop";
    /** The generation reached {@code maxTokens}. */
    public static final String LENGTH = "length";

    public GeneratedToken {
        if (index < 0) {
            throw new IllegalArgumentException("index must be >= 0, got " + index);
        }
        if (finishReason != null && !STOP.equals(finishReason) && !LENGTH.equals(finishReason)) {
            throw new IllegalArgumentException("finishReason must be null, \"stop\" or \"length\", got " + finishReason);
        }
    }

    /** A token without logprobs. */
    public GeneratedToken(int index, int tokenId, @Nullable String finishReason) {
        this(index, tokenId, finishReason, null);
    }

    /** Whether this is the last token of its generation. */
    public boolean isLast() {
        return finishReason != null;
    }
}
