package dev.ripcord.gateway.generation;

import org.jspecify.annotations.Nullable;

/**
 * Completion text as the client sees it: detokenized, stop strings applied, never a broken UTF-8 sequence.
 *
 * @param text             text to show now; empty only on the last delta
 * @param finishReason     null except on the last delta: {@code "stop"} (EOS or a stop string) or {@code "length"}
 * @param completionTokens tokens generated so far, including the one that produced this delta
 */
public record TextDelta(String text, @Nullable String finishReason, int completionTokens) {

    public boolean isLast() {
        return finishReason != null;
    }
}
