package dev.ripcord.protocol;

import java.util.Map;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * How to pick tokens, as the gateway sends it to both workers. {@code temperature == 0} is greedy. The seed makes
 * sampling reproducible; prefill samples the first token and decode the rest, so both derive their randomness from
 * the same seed (and the token's position), never from worker state.
 *
 * <p>The knobs after {@code seed} are optional on the wire: absent or null means off (the neutral value). Their
 * meaning and order of application are the engine's ({@code dev.ripcord.engine.SamplingParams}).
 *
 * @param topK              keep the k most likely tokens; null or 0: off
 * @param minP              keep tokens at least this fraction of the most likely one's probability; null: off
 * @param repetitionPenalty divide (positive) or multiply (negative) the logits of tokens seen in prompt or output;
 *                          null: off (1)
 * @param presencePenalty   subtracted once from the logit of every token generated so far; null: off
 * @param frequencyPenalty  subtracted per occurrence from the logit of every token generated so far; null: off
 * @param logitBias         token id → value added to its logit; null or empty: off
 * @param logprobs          report each token's log-probability and this many top alternatives (0..20); null: none
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Sampling(double temperature, double topP, long seed, Integer topK, Double minP,
                       Double repetitionPenalty, Double presencePenalty, Double frequencyPenalty,
                       Map<Integer, Double> logitBias, Integer logprobs) {

    public static final Sampling GREEDY = new Sampling(0.0, 1.0, 0L);

    public Sampling {
        logitBias = logitBias == null || logitBias.isEmpty() ? null : Map.copyOf(logitBias);
    }

    /** Temperature, nucleus and seed; every other knob off. */
    public Sampling(double temperature, double topP, long seed) {
        this(temperature, topP, seed, null, null, null, null, null, null, null);
    }

    /** Whether the decode worker needs the prompt's token ids (only a repetition penalty reads them). */
    public boolean readsPrompt() {
        return repetitionPenalty != null && repetitionPenalty != 1.0;
    }
}
