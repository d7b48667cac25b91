package dev.ripcord.gateway.generation;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The sampling knobs and per-token reports a request asks for beyond temperature, top-p and seed, validated by the
 * OpenAI edge; the serving core passes them to the workers unchanged (the engine samples with them). Neutral values
 * ask for nothing; {@link #NONE} is all neutral.
 *
 * @param topK              keep the k most likely tokens; 0: off
 * @param minP              keep tokens with at least this fraction of the most likely one's probability; 0: off
 * @param repetitionPenalty {@code > 0}; 1: off
 * @param presencePenalty   -2..2; 0: off
 * @param frequencyPenalty  -2..2; 0: off
 * @param logitBias         token id → -100..100, added to the token's logit; empty: off
 * @param stopTokenIds      token ids that end the generation like EOS (not shown in the text); empty: none
 * @param logprobs          -1: no logprobs; else report each token's logprob and this many top alternatives
 */
public record SamplingOptions(int topK, double minP, double repetitionPenalty, double presencePenalty,
        double frequencyPenalty, Map<Integer, Double> logitBias, List<Integer> stopTokenIds, int logprobs) {

    public static final SamplingOptions NONE = new SamplingOptions(0, 0, 1, 0, 0, Map.of(), List.of(), -1);

    public SamplingOptions {
        logitBias = Map.copyOf(Objects.requireNonNull(logitBias, "logitBias"));
        stopTokenIds = List.copyOf(Objects.requireNonNull(stopTokenIds, "stopTokenIds"));
    }

    public boolean wantsLogprobs() {
        return logprobs >= 0;
    }
}
