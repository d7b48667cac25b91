package dev.ripcord.gateway.openai;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.gateway.generation.RequestOutcome.FinishReason;
import dev.ripcord.gateway.generation.TextDelta;
import dev.ripcord.gateway.generation.WarmUp;
import reactor.core.publisher.Flux;

/**
 * Reports each generation's {@link RequestOutcome} once, from the client's side of the serving core: the last text
 * delta's finish reason ({@code stop}, including a stop string the edge matched; {@code length}; {@code abort}), a
 * failure (a cancel or a passed deadline is {@code abort}, anything else {@code error}, each with the error code the
 * client is told), or the client going away ({@code abort}, no error code). The first of these wins; the listener
 * runs on the thread that delivered it and must not block. A warm-up request ({@link WarmUp}) is not reported.
 */
final class OutcomeReporting {

    private OutcomeReporting() {
    }

    static Flux<TextDelta> observe(GenerationRequest request, Flux<TextDelta> deltas, RequestOutcome.Listener listener) {
        if (listener == RequestOutcome.Listener.NONE) {
            return deltas;
        }
        return Flux.deferContextual(view -> {
            if (WarmUp.marked(view)) {
                return deltas; // kept out of the user's figures
            }
            long started = System.nanoTime();
            AtomicBoolean reported = new AtomicBoolean();
            AtomicInteger tokens = new AtomicInteger(); // a cancel may race with the last token
            return deltas
                    .doOnNext(delta -> {
                        tokens.set(delta.completionTokens());
                        if (delta.isLast() && reported.compareAndSet(false, true)) {
                            listener.finished(new RequestOutcome(request, FinishReason.ofText(delta.finishReason()),
                                    RequestOutcome.NO_ERROR, delta.completionTokens(), System.nanoTime() - started));
                        }
                    })
                    .doOnError(failure -> {
                        if (reported.compareAndSet(false, true)) {
                            String code = OpenAiErrorHandler.toApiException(failure, null, request.requestId())
                                    .errorCode().code();
                            FinishReason reason = failure instanceof RequestCancelledException
                                    || failure instanceof DeadlineExceededException
                                    ? FinishReason.ABORT : FinishReason.ERROR;
                            listener.finished(new RequestOutcome(request, reason, code, tokens.get(),
                                    System.nanoTime() - started));
                        }
                    })
                    .doOnCancel(() -> {
                        if (reported.compareAndSet(false, true)) {
                            listener.finished(new RequestOutcome(request, FinishReason.ABORT, RequestOutcome.NO_ERROR,
                                    tokens.get(), System.nanoTime() - started));
                        }
                    });
        });
    }
}
