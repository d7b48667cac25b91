package dev.ripcord.gateway.generation;

import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * Completion text as the client sees it: detokenized, stop strings applied, never a broken UTF-8 sequence.
 *
 * @param text             text to show now; empty only on the last delta
 * @param finishReason     null except on the last delta: {@code "stop"} (EOS, a stop token id or a stop string),
 *                         {@code "length"}, or {@value #ABORT} (the request was cancelled before its end; see
 *                         {@link TextDeltas})
 * @param completionTokens tokens generated so far in this choice, including the one that produced this delta
 * @param choice           the choice this delta belongs to ({@code 0..n-1})
 * @param tokens           the generated tokens this delta covers (those accepted since the previous delta of its
 *                         choice), with their logprobs when asked for; what the OpenAI logprobs shapes are built from
 */
public record TextDelta(String text, @Nullable String finishReason, int completionTokens, int choice,
        List<GeneratedToken> tokens) {

    public TextDelta {
        tokens = List.copyOf(tokens);
    }

    /** A delta of choice 0 that names no tokens. */
    public TextDelta(String text, @Nullable String finishReason, int completionTokens) {
        this(text, finishReason, completionTokens, 0, List.of());
    }

    /**
     * The request was cancelled (explicitly, by a worker, or by its deadline) before its natural end: vLLM's
     * {@code finish_reason} for an aborted request, an extension of OpenAI's set.
     */
    public static final String ABORT = "abort";

    public boolean isLast() {
        return finishReason != null;
    }

    /** This delta, as part of choice {@code index}. */
    public TextDelta withChoice(int index) {
        return new TextDelta(text, finishReason, completionTokens, index, tokens);
    }
}
