package dev.ripcord.stack;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.engine.TokenLogprobs;

/**
 * What the served model produces for a prompt when nothing is disaggregated: one engine in this JVM, the whole
 * prompt prefilled in one call, the first token sampled from its last logits, then one decode step per token.
 * The stack must produce exactly this; the engine promises bit-identical results for any chunking, batching and
 * thread count, so any difference is a bug in how the stack moves KV, tokens or sampling state.
 *
 * <p>Stop rules are the decode worker's: a generation ends after {@code maxTokens} tokens, or on the
 * end-of-sequence token unless {@code ignoreEos} (the EOS token is counted, as OpenAI's usage counts it).
 *
 * <p>Thread-safe: calls are serialized, as the engine is single-caller.
 */
public final class ReferenceEngine implements AutoCloseable {

    private final InferenceEngine engine;

    public ReferenceEngine(Preset preset, long seed) {
        // One thread: the stack's JVMs already share the test machine's cores; results do not depend on it.
        // Pages for one full-context sequence, the most this engine ever holds (the default is two).
        EngineOptions options = EngineOptions.defaults().withThreads(1);
        int pages = (preset.config().contextLength() + options.pageTokens() - 1) / options.pageTokens();
        this.engine = InferenceEngine.create(preset, seed, options.withKvPages(pages));
    }

    /**
     * Loads the engine's classes by running a two-token generation on the {@code tiny} model (milliseconds), so
     * that a later rebuild of the engine's jar by a concurrent build cannot break class loading in this JVM.
     */
    static void loadEngineClasses() {
        try (ReferenceEngine tiny = new ReferenceEngine(Preset.TINY, 1)) {
            tiny.generate("load", 2, false, SamplingParams.greedy());
        }
    }

    /** Prompt tokens as the gateway makes them: the text's tokens after a BOS token. */
    public int[] encode(String prompt) {
        return engine.tokenizer().encode(prompt, true);
    }

    /** The text of {@code tokens} as one piece (what the gateway shows for them). */
    public synchronized String decode(int[] tokens) {
        return engine.tokenizer().decode(tokens);
    }

    public int eos() {
        return engine.tokenizer().eos();
    }

    public int contextLength() {
        return engine.config().contextLength();
    }

    /** The completion of {@code prompt} (encoded with BOS). */
    public Generation generate(String prompt, int maxTokens, boolean ignoreEos, SamplingParams sampling) {
        return generate(encode(prompt), maxTokens, ignoreEos, sampling);
    }

    /** The completion of {@code promptTokens}. */
    public synchronized Generation generate(int[] promptTokens, int maxTokens, boolean ignoreEos,
                                            SamplingParams sampling) {
        if (maxTokens < 1 || promptTokens.length + maxTokens > contextLength()) {
            throw new IllegalArgumentException("prompt of %d tokens + max_tokens %d must fit the context of %d"
                    .formatted(promptTokens.length, maxTokens, contextLength()));
        }
        Sequence seq = engine.newSequence(sampling);
        try {
            List<Integer> tokens = new ArrayList<>(maxTokens);
            List<TokenLogprobs> logprobs = new ArrayList<>();
            int chunk = engine.options().maxChunkTokens();
            for (int from = 0; from < promptTokens.length; from += chunk) {
                engine.prefill(seq, promptTokens, from, Math.min(from + chunk, promptTokens.length));
            }
            int token = engine.sample(seq);
            tokens.add(token);
            if (sampling.wantsLogprobs()) {
                logprobs.add(seq.lastLogprobs());
            }
            while (!(token == eos() && !ignoreEos) && tokens.size() < maxTokens) {
                token = engine.decodeStep(List.of(seq))[0];
                tokens.add(token);
                if (sampling.wantsLogprobs()) {
                    logprobs.add(seq.lastLogprobs());
                }
            }
            int[] ids = tokens.stream().mapToInt(Integer::intValue).toArray();
            String finish = token == eos() && !ignoreEos ? "stop" : "length";
            return new Generation(promptTokens.length, ids, engine.tokenizer().decode(ids), finish,
                    List.copyOf(logprobs));
        } finally {
            engine.free(seq);
        }
    }

    @Override
    public synchronized void close() {
        engine.close();
    }

    /**
     * One reference completion.
     *
     * @param promptTokens prompt length in tokens, BOS included (what {@code usage.prompt_tokens} says)
     * @param tokens       the generated tokens, EOS included when it ended the generation
     * @param text         the tokens detokenized as a whole
     * @param finishReason {@code stop} (EOS) or {@code length}
     * @param logprobs     each token's logprobs when the sampling asked for them, else empty
     */
    public record Generation(int promptTokens, int[] tokens, String text, String finishReason,
                             List<TokenLogprobs> logprobs) {

        public int completionTokens() {
            return tokens.length;
        }

        @Override
        public String toString() {
            return "Generation[promptTokens=%d, finish=%s, tokens=%s, text=%s]".formatted(promptTokens, finishReason,
                    Arrays.toString(tokens), text);
        }
    }
}
