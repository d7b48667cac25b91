package dev.ripcord.gateway.serving;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.routing.WorkerInstance;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * Tells a worker why its stream is being closed, before closing it: the typed in-band cancel.
 *
 * <p>Design note: a Reactive Streams cancel carries no reason, and a closed connection says nothing either, so a
 * worker that only watched its stream could never tell a deadline from a stalled client. When an attempt that the
 * worker has answered (it holds the request) is cancelled while the request's context has a reason, this posts
 * {@value InternalApi#CANCEL} with that reason to the same instance and closes the exchange only once the answer
 * (or an error, or {@link #ANSWER_WAIT}) has come: the reason is in the worker's registry before the close, so the
 * close is a replay there, never a race. Without a reason (the leg ended on its own, or the attempt never got an
 * answer) the exchange is closed at once, and the worker records exactly that: a connection closed.
 */
final class InBandCancel {

    private static final Logger log = LoggerFactory.getLogger(InBandCancel.class);
    /** How long a close waits for the worker to acknowledge the reason; a dead worker must not hold it longer. */
    static final Duration ANSWER_WAIT = Duration.ofSeconds(2);

    private InBandCancel() {
    }

    /**
     * {@code exchange}, whose cancellation first tells {@code instance} the reason {@code why} supplies (null: no
     * reason, close at once).
     */
    static <E> Flux<E> tellWhyBeforeClosing(WebClient client, WorkerInstance instance, String requestId,
                                            Supplier<CancelReason> why, Flux<E> exchange) {
        return Flux.create(sink -> {
            AtomicBoolean answered = new AtomicBoolean();
            Disposable upstream = exchange.contextWrite(sink.contextView()).subscribe(event -> {
                answered.set(true);
                sink.next(event);
            }, sink::error, sink::complete);
            sink.onCancel(() -> {
                CancelReason reason = why.get();
                if (reason == null || !answered.get()) {
                    upstream.dispose();
                    return;
                }
                client.post()
                        .uri(instance.uri().resolve(InternalApi.CANCEL.replace("{requestId}", requestId)
                                + "?reason=" + reason.name()))
                        .header(RequestIds.HEADER, requestId)
                        .retrieve().toBodilessEntity()
                        .timeout(ANSWER_WAIT)
                        .doOnError(e -> log.debug("requestId={} {} did not take the in-band cancel ({}): {}",
                                requestId, instance.name(), reason, e.toString()))
                        .doFinally(signal -> upstream.dispose())
                        .contextWrite(sink.contextView())
                        .subscribe(ok -> { }, e -> { });
            });
        });
    }
}
