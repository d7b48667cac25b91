package dev.ripcord.engine;

/**
 * How a sequence picks its next token from the logits.
 *
 * <p>{@code temperature == 0} is greedy (argmax, the lowest token id on ties) and ignores the rest. Otherwise the
 * logits are divided by {@code temperature}, softmaxed, restricted to the smallest set of most likely tokens whose
 * probability reaches {@code topP} ("nucleus"), and sampled with a uniform draw that is a pure function of
 * {@code (seed, k)} for the sequence's {@code k}-th sampled token. So a given seed reproduces the same tokens,
 * including across a prefill/decode split where the prefill worker samples token 0 and the decode worker
 * continues from token 1.
 *
 * @param temperature {@code >= 0}; 0 means greedy
 * @param topP        in {@code (0, 1]}; 1 disables nucleus filtering
 * @param seed        the sequence's random seed
 */
public record SamplingParams(float temperature, float topP, long seed) {
    private static final SamplingParams GREEDY = new SamplingParams(0f, 1f, 0L);

    public SamplingParams {
        Checks.requireArgument(temperature >= 0 && Float.isFinite(temperature),
                "temperature must be finite and >= 0, got %s", temperature);
        Checks.requireArgument(topP > 0 && topP <= 1, "topP must be in (0, 1], got %s", topP);
    }

    public static SamplingParams greedy() {
        return GREEDY;
    }

    public boolean isGreedy() {
        return temperature == 0f;
    }
}
