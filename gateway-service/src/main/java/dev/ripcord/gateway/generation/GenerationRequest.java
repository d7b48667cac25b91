package dev.ripcord.gateway.generation;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

import org.jspecify.annotations.Nullable;

/**
 * What the serving core needs from a validated OpenAI request. Built only by the OpenAI edge, after every field has
 * been checked: {@code maxTokens} already fits both the server's limit and the context window.
 *
 * <p>{@code promptTokens} is copied on construction and owned by this record; callers must not mutate the array
 * returned by the accessor. {@link #toString()} prints sizes, never prompt content or stop strings.
 *
 * @param requestId    the client's {@code X-Request-Id} or a generated one; also the {@code id} of every response
 * @param model        the served model id the client asked for
 * @param promptTokens the prompt, tokenized (for chat: the rendered chat template), never empty
 * @param maxTokens    how many tokens to generate at most, {@code >= 1}
 * @param temperature  0..2
 * @param topP         in (0, 1]
 * @param seed         the sampling seed, empty when the client gave none
 * @param stop         up to 4 non-empty stop strings; applied by the gateway on the detokenized text
 * @param ignoreEos    keep generating past EOS until {@code maxTokens} (vLLM extension)
 * @param stream       whether the client asked for server-sent events
 * @param includeUsage whether a streamed response ends with a usage chunk
 * @param user         the client's opaque end-user id, or null
 * @param timeout      the client's deadline for the whole request ({@code timeout} field or {@code X-Ripcord-Timeout}
 *                     header, the shorter of the two), or null for none; the serving core enforces it
 * @param kind         which endpoint the request came through
 * @param sampling     the other sampling knobs, stop token ids and the logprobs asked for
 * @param n            how many choices to generate, {@code >= 1}; each is its own generation of the prompt
 * @param continuousUsage whether every streamed chunk carries the usage so far
 *                     ({@code stream_options.continuous_usage_stats})
 * @param cacheSalt    the client's {@code cache_salt}, or null: only requests with the same salt share cached prompt
 *                     pages (it seeds their prefix-cache keys, at the prefill worker and in routing)
 */
public record GenerationRequest(String requestId, String model, int[] promptTokens, int maxTokens,
        double temperature, double topP, OptionalLong seed, List<String> stop,
        boolean ignoreEos, boolean stream, boolean includeUsage, @Nullable String user, @Nullable Duration timeout,
        Kind kind, SamplingOptions sampling, int n, boolean continuousUsage, @Nullable String cacheSalt) {

    /** No cache salt. */
    public GenerationRequest(String requestId, String model, int[] promptTokens, int maxTokens,
            double temperature, double topP, OptionalLong seed, List<String> stop,
            boolean ignoreEos, boolean stream, boolean includeUsage, @Nullable String user,
            @Nullable Duration timeout, Kind kind, SamplingOptions sampling, int n, boolean continuousUsage) {
        this(requestId, model, promptTokens, maxTokens, temperature, topP, seed, stop, ignoreEos, stream,
                includeUsage, user, timeout, kind, sampling, n, continuousUsage, null);
    }

    /** One choice, no other sampling knobs, no continuous usage. */
    public GenerationRequest(String requestId, String model, int[] promptTokens, int maxTokens,
            double temperature, double topP, OptionalLong seed, List<String> stop,
            boolean ignoreEos, boolean stream, boolean includeUsage, @Nullable String user,
            @Nullable Duration timeout, Kind kind) {
        this(requestId, model, promptTokens, maxTokens, temperature, topP, seed, stop, ignoreEos, stream,
                includeUsage, user, timeout, kind, SamplingOptions.NONE, 1, false);
    }

    /** The endpoint a request came through; decides the response shapes, not the generation. */
    public enum Kind {
        /** {@code POST /v1/completions}. */
        COMPLETION,
        /** {@code POST /v1/chat/completions}; the prompt is the rendered chat template. */
        CHAT
    }

    public GenerationRequest {
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(seed, "seed");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(sampling, "sampling");
        if (n < 1) {
            throw new IllegalArgumentException("n must be >= 1, got " + n);
        }
        stop = List.copyOf(stop);
        promptTokens = promptTokens.clone();
        if (promptTokens.length == 0) {
            throw new IllegalArgumentException("promptTokens must not be empty");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be >= 1, got " + maxTokens);
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GenerationRequest r && requestId.equals(r.requestId) && model.equals(r.model)
                && Arrays.equals(promptTokens, r.promptTokens) && maxTokens == r.maxTokens
                && Double.compare(temperature, r.temperature) == 0 && Double.compare(topP, r.topP) == 0
                && seed.equals(r.seed) && stop.equals(r.stop) && ignoreEos == r.ignoreEos && stream == r.stream
                && includeUsage == r.includeUsage && Objects.equals(user, r.user)
                && Objects.equals(timeout, r.timeout) && kind == r.kind && sampling.equals(r.sampling) && n == r.n
                && continuousUsage == r.continuousUsage && Objects.equals(cacheSalt, r.cacheSalt);
    }

    @Override
    public int hashCode() {
        return Objects.hash(requestId, model, Arrays.hashCode(promptTokens), maxTokens, temperature, topP, seed, stop,
                ignoreEos, stream, includeUsage, user, timeout, kind, sampling, n, continuousUsage, cacheSalt);
    }

    /** Sizes only: prompts and stop strings are user content and stay out of logs. */
    @Override
    public String toString() {
        return "GenerationRequest[requestId=" + requestId + ", model=" + model + ", kind=" + kind
                + ", promptTokens=" + promptTokens.length + ", maxTokens=" + maxTokens
                + ", temperature=" + temperature + ", topP=" + topP + ", seed=" + seed
                + ", stop=" + stop.size() + ", ignoreEos=" + ignoreEos + ", stream=" + stream
                + ", includeUsage=" + includeUsage + ", timeout=" + timeout + ", n=" + n
                + ", topK=" + sampling.topK() + ", minP=" + sampling.minP()
                + ", repetitionPenalty=" + sampling.repetitionPenalty()
                + ", presencePenalty=" + sampling.presencePenalty() + ", frequencyPenalty=" + sampling.frequencyPenalty()
                + ", logitBias=" + sampling.logitBias().size() + ", stopTokenIds=" + sampling.stopTokenIds().size()
                + ", logprobs=" + sampling.logprobs() + ", continuousUsage=" + continuousUsage + ", cacheSalt=" + (cacheSalt == null ? "none" : "set") + "]";
    }
}
