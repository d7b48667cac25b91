package dev.ripcord.gateway.generation;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Turns the generator's token stream into the text the client sees: incremental detokenization, then stop strings.
 *
 * <p>Emits a {@link TextDelta} only when there is text to show or the generation ended, so no empty chunk ever
 * reaches the client. The last delta carries the finish reason. When a stop string matches, the upstream token Flux
 * is cancelled right there: that cancellation is how the serving core learns to stop prefill and decode. A natural
 * end (EOS, length) is not cancelled but lets the generator complete, so it never looks like an abandoned request.
 */
public final class TextDeltas {

    private TextDeltas() {
    }

    /**
     * @param tokens       the generation; subscribed once per subscription to the result
     * @param detokenizers a fresh detokenizer per subscription
     * @param stops        stop strings, possibly empty
     */
    public static Flux<TextDelta> decode(Flux<GeneratedToken> tokens, Supplier<TextCodec.Detokenizer> detokenizers,
            List<String> stops) {
        return decode(tokens, detokenizers, stops, List.of(), false);
    }

    /**
     * As {@link #decode(Flux, Supplier, List)}, and: a last token that is one of {@code stopTokenIds} ended the
     * generation as a stop and is not shown (its text is dropped, as EOS renders as nothing); with
     * {@code keepTokens} every delta lists the tokens it covers ({@link TextDelta#tokens()}, for logprobs).
     */
    public static Flux<TextDelta> decode(Flux<GeneratedToken> tokens, Supplier<TextCodec.Detokenizer> detokenizers,
            List<String> stops, List<Integer> stopTokenIds, boolean keepTokens) {
        return Flux.defer(() -> {
            Decoder decoder = new Decoder(detokenizers.get(), new StopStringScanner(stops), Set.copyOf(stopTokenIds),
                    keepTokens);
            return tokens.<TextDelta>handle((token, sink) -> {
                if (decoder.finished) {
                    return; // contract: nothing follows the last token; ignore rather than report twice
                }
                TextDelta delta = decoder.accept(token);
                if (!delta.text().isEmpty() || delta.isLast()) {
                    sink.next(delta);
                }
                if (decoder.scanner.stopped()) {
                    sink.complete(); // cancels the generation upstream
                }
            }).concatWith(Mono.defer(() -> decoder.finished ? Mono.empty()
                    : Mono.error(new IllegalStateException("token generator completed without a finish reason"))));
        });
    }

    /** Per-generation state; signals arrive serially, so no synchronization. */
    private static final class Decoder {

        private final TextCodec.Detokenizer detokenizer;
        private final StopStringScanner scanner;
        private final Set<Integer> stopTokenIds;
        private final List<GeneratedToken> pending;
        private int completionTokens;
        private boolean finished;

        Decoder(TextCodec.Detokenizer detokenizer, StopStringScanner scanner, Set<Integer> stopTokenIds,
                boolean keepTokens) {
            this.detokenizer = detokenizer;
            this.scanner = scanner;
            this.stopTokenIds = stopTokenIds;
            this.pending = keepTokens ? new ArrayList<>() : null;
        }

        TextDelta accept(GeneratedToken token) {
            completionTokens++;
            if (pending != null) {
                pending.add(token);
            }
            boolean hidden = token.isLast() && GeneratedToken.STOP.equals(token.finishReason())
                    && stopTokenIds.contains(token.tokenId());
            String text = hidden ? "" : detokenizer.accept(token.tokenId());
            if (token.isLast()) {
                text += detokenizer.flush();
            }
            String shown = scanner.accept(text);
            if (scanner.stopped()) {
                finished = true;
                return delta(shown, GeneratedToken.STOP);
            }
            if (token.isLast()) {
                finished = true;
                return delta(shown + scanner.drain(), token.finishReason());
            }
            return delta(shown, null);
        }

        /** A delta; the tokens it covers are handed over only when it is going out (text, or the end). */
        private TextDelta delta(String text, String finishReason) {
            if (pending == null || text.isEmpty() && finishReason == null) {
                return new TextDelta(text, finishReason, completionTokens, 0, List.of());
            }
            TextDelta delta = new TextDelta(text, finishReason, completionTokens, 0, pending);
            pending.clear();
            return delta;
        }
    }
}
