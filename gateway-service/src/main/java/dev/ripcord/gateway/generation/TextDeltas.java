package dev.ripcord.gateway.generation;

import java.util.List;
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
        return Flux.defer(() -> {
            Decoder decoder = new Decoder(detokenizers.get(), new StopStringScanner(stops));
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
        private int completionTokens;
        private boolean finished;

        Decoder(TextCodec.Detokenizer detokenizer, StopStringScanner scanner) {
            this.detokenizer = detokenizer;
            this.scanner = scanner;
        }

        TextDelta accept(GeneratedToken token) {
            completionTokens++;
            String text = detokenizer.accept(token.tokenId());
            if (token.isLast()) {
                text += detokenizer.flush();
            }
            String shown = scanner.accept(text);
            if (scanner.stopped()) {
                finished = true;
                return new TextDelta(shown, GeneratedToken.STOP, completionTokens);
            }
            if (token.isLast()) {
                finished = true;
                return new TextDelta(shown + scanner.drain(), token.finishReason(), completionTokens);
            }
            return new TextDelta(shown, null, completionTokens);
        }
    }
}
