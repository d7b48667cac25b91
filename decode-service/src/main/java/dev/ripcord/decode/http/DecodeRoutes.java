package dev.ripcord.decode.http;

import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerEndpoint;
import dev.ripcord.worker.http.WorkerRoutes;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * The decode worker's own route, {@code POST /internal/v1/decode}: the response is the job's event stream
 * (RESERVED, then tokens). The routes every worker has are {@link WorkerRoutes}'.
 */
@Component
public final class DecodeRoutes extends WorkerEndpoint<DecodeRequest> {

    private final DecodeScheduler scheduler;
    private final int contextLength;

    DecodeRoutes(DecodeScheduler scheduler, DecodeProperties properties, WorkerContext context) {
        super("decode", InternalApi.DECODE, properties.retryAfter(), scheduler, DecodeRequest.class);
        this.scheduler = scheduler;
        this.contextLength = context.engine().config().contextLength();
    }

    @Override
    protected Mono<ServerResponse> accept(DecodeRequest body, WorkerRoutes routes) {
        // Registered, the request may wait for KV pages without holding a thread; a gateway that closes the exchange
        // meanwhile cancels it (in band), which takes it out of the admission queue. Registration itself runs on the
        // engine loop: a close before it has happened cancels by ID as well, and the tombstone that leaves ends the
        // job as it registers, before anything is reserved (else it would hold its pages until the transfer's attach
        // timeout).
        return Mono.fromFuture(scheduler.register(body))
                .doOnCancel(() -> routes.closed(body.requestId()))
                .flatMap(admitted -> Mono.fromFuture(admitted).doOnCancel(() -> routes.closed(body.requestId())))
                .flatMap(job -> routes.stream(job.requestId(), job.events(), DecodeEvent.class))
                .onErrorResume(DecodeScheduler.NoCapacityException.class,
                        e -> routes.busy(body.requestId(), e.getMessage(), e.retryAfter()))
                .onErrorResume(DuplicateRegistrationException.class, e -> routes.duplicate(body.requestId(), e));
    }

    @Override
    protected String invalid(DecodeRequest body) {
        boolean valid = RequestIds.isValid(body.requestId()) && validSampling(body.sampling())
                && body.promptTokens() >= 1 && body.maxTokens() >= 1
                && (long) body.promptTokens() + body.maxTokens() <= contextLength
                && (!body.sampling().readsPrompt()
                        || body.promptIds() != null && body.promptIds().length == body.promptTokens());
        return valid ? null : "requestId, sampling (finite temperature >= 0, top_p in (0, 1], the other knobs in "
                + "range), promptTokens >= 1 and maxTokens >= 1 within the context of " + contextLength
                + ", and with a repetition penalty the prompt's ids are required";
    }
}
