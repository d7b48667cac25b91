package dev.ripcord.engine;

import java.util.Map;

/**
 * How a sequence picks its next token from the logits, and what it reports about the choice.
 *
 * <p>The pipeline, in order (each step off at its neutral value):
 * <ol>
 *   <li>{@code logitBias}: added to the named tokens' logits;</li>
 *   <li>{@code repetitionPenalty} (Hugging Face / vLLM): every token seen in the prompt or the output so far has
 *       its logit divided by the penalty if positive, multiplied by it if not;</li>
 *   <li>{@code frequencyPenalty} and {@code presencePenalty} (OpenAI): every token generated so far loses
 *       {@code count · frequencyPenalty + presencePenalty} (prompt tokens do not count);</li>
 *   <li>{@code temperature == 0} is greedy: argmax of the processed logits, the lowest token id on ties; the
 *       remaining steps are skipped. Otherwise the logits are divided by {@code temperature} and softmaxed;</li>
 *   <li>{@code topK}: only the {@code topK} most likely tokens stay (ties broken by lower id);</li>
 *   <li>{@code minP}: only tokens with probability {@code >= minP ·} the most likely one's stay;</li>
 *   <li>{@code topP}: only the smallest set of most likely remaining tokens whose probability reaches
 *       {@code topP} stays ("nucleus");</li>
 *   <li>a uniform draw that is a pure function of {@code (seed, k)} for the sequence's {@code k}-th sampled
 *       token picks among what stayed, in proportion to probability.</li>
 * </ol>
 * So a given seed reproduces the same tokens on any worker, including across a prefill/decode split where the
 * prefill worker samples token 0 and the decode worker continues from token 1.
 *
 * <p>{@code logprobs >= 0} asks for the chosen token's log-probability and the {@code logprobs} most likely
 * tokens' ({@link TokenLogprobs}), computed from the model's raw logits (log-softmax before bias, penalties,
 * temperature and filtering: vLLM's default {@code raw_logprobs}); {@code -1} asks for none.
 *
 * @param temperature       {@code >= 0}; 0 means greedy
 * @param topP              in {@code (0, 1]}; 1 disables nucleus filtering
 * @param seed              the sequence's random seed
 * @param topK              {@code >= 0}; 0 disables
 * @param minP              in {@code [0, 1]}; 0 disables
 * @param repetitionPenalty {@code > 0}; 1 disables
 * @param presencePenalty   finite; 0 disables
 * @param frequencyPenalty  finite; 0 disables
 * @param logitBias         token id → bias, copied; empty disables
 * @param logprobs          {@code -1} (none) or how many top alternatives to report, {@code 0..}{@link #MAX_LOGPROBS}
 */
public record SamplingParams(float temperature, float topP, long seed, int topK, float minP,
        float repetitionPenalty, float presencePenalty, float frequencyPenalty, Map<Integer, Float> logitBias,
        int logprobs) {

    /** The most top alternatives a token can report. */
    public static final int MAX_LOGPROBS = 20;

    private static final SamplingParams GREEDY = new SamplingParams(0f, 1f, 0L);

    public SamplingParams {
        Checks.requireArgument(temperature >= 0 && Float.isFinite(temperature),
                "temperature must be finite and >= 0, got %s", temperature);
        Checks.requireArgument(topP > 0 && topP <= 1, "topP must be in (0, 1], got %s", topP);
        Checks.requireArgument(topK >= 0, "topK must be >= 0, got %s", topK);
        Checks.requireArgument(minP >= 0 && minP <= 1, "minP must be in [0, 1], got %s", minP);
        Checks.requireArgument(repetitionPenalty > 0 && Float.isFinite(repetitionPenalty),
                "repetitionPenalty must be finite and > 0, got %s", repetitionPenalty);
        Checks.requireArgument(Float.isFinite(presencePenalty), "presencePenalty must be finite, got %s",
                presencePenalty);
        Checks.requireArgument(Float.isFinite(frequencyPenalty), "frequencyPenalty must be finite, got %s",
                frequencyPenalty);
        logitBias = Map.copyOf(logitBias);
        for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
            Checks.requireArgument(e.getKey() >= 0 && Float.isFinite(e.getValue()),
                    "logitBias must map token ids >= 0 to finite values, got %s -> %s", e.getKey(), e.getValue());
        }
        Checks.requireArgument(logprobs >= -1 && logprobs <= MAX_LOGPROBS, "logprobs must be in [-1, %s], got %s",
                MAX_LOGPROBS, logprobs);
    }

    /** Temperature, nucleus and seed only; every other knob neutral. */
    public SamplingParams(float temperature, float topP, long seed) {
        this(temperature, topP, seed, 0, 0f, 1f, 0f, 0f, Map.of(), -1);
    }

    public static SamplingParams greedy() {
        return GREEDY;
    }

    public boolean isGreedy() {
        return temperature == 0f;
    }

    /** Whether the logits are changed before selection (bias or a penalty). */
    public boolean processesLogits() {
        return !logitBias.isEmpty() || penalizes();
    }

    /** Whether a penalty needs the sequence's token history. */
    public boolean penalizes() {
        return repetitionPenalty != 1f || presencePenalty != 0f || frequencyPenalty != 0f;
    }

    /** Whether the prompt's tokens matter to selection (only the repetition penalty reads them). */
    public boolean readsPrompt() {
        return repetitionPenalty != 1f;
    }

    public boolean wantsLogprobs() {
        return logprobs >= 0;
    }

    public SamplingParams withTopK(int k) {
        return new SamplingParams(temperature, topP, seed, k, minP, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, logprobs);
    }

    public SamplingParams withMinP(float p) {
        return new SamplingParams(temperature, topP, seed, topK, p, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, logprobs);
    }

    public SamplingParams withPenalties(float repetition, float presence, float frequency) {
        return new SamplingParams(temperature, topP, seed, topK, minP, repetition, presence, frequency, logitBias,
                logprobs);
    }

    public SamplingParams withLogitBias(Map<Integer, Float> bias) {
        return new SamplingParams(temperature, topP, seed, topK, minP, repetitionPenalty, presencePenalty,
                frequencyPenalty, bias, logprobs);
    }

    public SamplingParams withLogprobs(int top) {
        return new SamplingParams(temperature, topP, seed, topK, minP, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, top);
    }

    public SamplingParams withSeed(long s) {
        return new SamplingParams(temperature, topP, s, topK, minP, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, logprobs);
    }
}
