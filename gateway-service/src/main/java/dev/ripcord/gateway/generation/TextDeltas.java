package dev.ripcord.gateway.generation;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import dev.ripcord.protocol.CancelReason;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Turns the generator's token stream into the text the client sees: incremental detokenization, then stop strings.
 *
 * <p>Emits a {@link TextDelta} only when there is text to show or the generation ended, so no empty chunk ever
 * reaches the client. The last delta carries the finish reason. When a stop string matches, the upstream token Flux
 * is cancelled right there: that cancellation is how the serving core learns to stop prefill and decode. A natural
 * end (EOS, length) is not cancelled but lets the generator complete, so it never looks like an abandoned request.
 *
 * <p><b>Abort.</b> A generation the serving core ends because the request was cancelled from outside the client's
 * own response (an explicit {@code POST /v1/requests/{id}/cancel}, a cancel a worker received through Kafka, the
 * request's deadline: {@link RequestCancelledException}, {@link DeadlineExceededException}) does not fail: it ends
 * with a last delta whose finish reason is {@link TextDelta#ABORT}, carrying the text still held back (a partial
 * UTF-8 sequence, a possible stop-string prefix) and the count of the tokens relayed so far, so the client gets
 * what was produced, and its usage. A cancel that arrives after the last token changes nothing: the answer was
 * complete. Other failures (a worker's shutdown, a fault) stay failures.
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
        return Flux.deferContextual(context -> {
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
                    // the answer is complete: say so before the cancel reaches the serving core
                    context.<CancelCause>getOrEmpty(CancelCause.CONTEXT_KEY)
                            .ifPresent(cause -> cause.recordFinish(GeneratedToken.STOP));
                    sink.complete(); // cancels the generation upstream
                }
            }).onErrorResume(TextDeltas::isAbort, cancelled -> decoder.finished ? Mono.empty()
                    : Mono.just(decoder.abort()))
                    .concatWith(Mono.defer(() -> decoder.finished ? Mono.empty()
                            : Mono.error(new IllegalStateException("token generator completed without a finish reason"))));
        });
    }

    /**
     * Whether {@code failure} is the serving core reporting a cancel that the client should see as an aborted
     * answer, not as an error: any {@link RequestCancelledException} and {@link DeadlineExceededException}. (A
     * worker's own shutdown arrives as {@link WorkerUnavailableException}: the server's doing, a 503 worth a retry.)
     */
    public static boolean isAbort(Throwable failure) {
        return failure instanceof RequestCancelledException || failure instanceof DeadlineExceededException;
    }

    /** The cancel reason an {@linkplain #isAbort abort} failure stands for, for logs: e.g. {@code CLIENT_CANCEL}. */
    public static String abortCause(Throwable failure) {
        return switch (failure) {
            case DeadlineExceededException e -> CancelReason.DEADLINE.name();
            case RequestCancelledException e -> e.reason();
            default -> failure.getClass().getSimpleName();
        };
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

        /**
         * The last delta of an aborted generation: the text the stop-string scanner held back, and the tokens relayed
         * so far. Bytes the detokenizer still holds are the start of a character whose remaining bytes were never
         * generated: they are dropped, not rendered as U+FFFD as at a natural end, so an aborted answer's text is
         * always a prefix of the answer the request would have had.
         */
        TextDelta abort() {
            finished = true;
            return delta(scanner.drain(), TextDelta.ABORT);
        }
    }
}
