package dev.ripcord.gateway.generation;

import org.jspecify.annotations.Nullable;

/**
 * Completion text as the client sees it: detokenized, stop strings applied, never a broken UTF-8 sequence.
 *
 * @param text             text to show now; empty only on the last delta
 * @param finishReason     null except on the last delta: {@code "stop"} (EOS or a stop string), {@code "length"}, or
 *                         {@value #ABORT} (the request was cancelled before its end; see {@link TextDeltas})
 * @param completionTokens tokens generated so far, including the one that produced this delta
 */
public record TextDelta(String text, @Nullable String finishReason, int completionTokens) {

    /**
     * The request was cancelled (explicitly, by a worker, or by its deadline) before its natural end: vLLM's
     * {@code finish_reason} for an aborted request, an extension of OpenAI's set.
     */
    public static final String ABORT = "abort";

    public boolean isLast() {
        return finishReason != null;
    }
}
