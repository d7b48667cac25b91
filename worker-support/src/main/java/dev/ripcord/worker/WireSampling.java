package dev.ripcord.worker;

import java.util.HashMap;
import java.util.Map;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.TokenLogprobs;
import dev.ripcord.protocol.Logprobs;
import dev.ripcord.protocol.Sampling;

/**
 * The one translation between the P/D protocol's sampling and logprobs records and the engine's, shared by the
 * prefill and decode workers so that both sample with exactly the same parameters (the first token on prefill,
 * the rest on decode). An absent optional knob is the engine's neutral value.
 */
public final class WireSampling {

    private WireSampling() {
    }

    /** @throws IllegalArgumentException if a value is out of the engine's range */
    public static SamplingParams toEngine(Sampling s) {
        Map<Integer, Float> bias = new HashMap<>();
        if (s.logitBias() != null) {
            s.logitBias().forEach((token, value) -> bias.put(token, value.floatValue()));
        }
        return new SamplingParams((float) s.temperature(), (float) s.topP(), s.seed(),
                s.topK() == null ? 0 : s.topK(),
                s.minP() == null ? 0f : s.minP().floatValue(),
                s.repetitionPenalty() == null ? 1f : s.repetitionPenalty().floatValue(),
                s.presencePenalty() == null ? 0f : s.presencePenalty().floatValue(),
                s.frequencyPenalty() == null ? 0f : s.frequencyPenalty().floatValue(),
                bias,
                s.logprobs() == null ? -1 : s.logprobs());
    }

    /** The wire form of what the engine reported, or null for null. */
    public static Logprobs toWire(TokenLogprobs lp) {
        return lp == null ? null : new Logprobs(lp.logprob(), lp.topTokens(), lp.topLogprobs());
    }

    /** The engine form of {@code token}'s wire logprobs, or null for null. */
    public static TokenLogprobs toEngine(int token, Logprobs lp) {
        return lp == null ? null : new TokenLogprobs(token, lp.logprob(), lp.topTokens(), lp.topLogprobs());
    }
}
