package dev.ripcord.decode.http;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.worker.SchedulerJournal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The decode worker's internal HTTP API. The response to {@code POST /internal/v1/decode} is the job's event
 * stream (RESERVED, then tokens); when the gateway closes it early, that is the in-band cancellation signal.
 */
@Configuration(proxyBeanMethods = false)
public class DecodeRoutes {

    private static final Logger log = LoggerFactory.getLogger(DecodeRoutes.class);
    private static final MediaType NDJSON = MediaType.parseMediaType(InternalApi.NDJSON);

    @Bean
    RouterFunction<ServerResponse> decodeRouter(DecodeScheduler scheduler, CancellationRegistry registry,
                                                CancelProperties cancel, DecodeProperties properties,
                                                InferenceEngine engine, TransferAgent agent,
                                                SchedulerJournal journal) {
        return RouterFunctions.route()
                .POST(InternalApi.DECODE, request -> decode(request, scheduler, registry, cancel, properties, engine))
                .GET(InternalApi.STATUS, request -> ServerResponse.ok().bodyValue(new WorkerStatus("decode",
                        scheduler.awaitingKv(), scheduler.running(), engine.pagePool().pagesLive(),
                        agent.stats().liveRegions(), agent.stats().liveSessions(), registry.liveRegistrations(),
                        scheduler.aborts(), 0)))
                .GET(InternalApi.JOURNAL, request -> ServerResponse.ok().bodyValue(journal.since(
                        Long.parseLong(request.queryParam("after").orElse("0")))))
                .build();
    }

    private static Mono<ServerResponse> decode(ServerRequest request, DecodeScheduler scheduler,
                                               CancellationRegistry registry, CancelProperties cancel,
                                               DecodeProperties properties, InferenceEngine engine) {
        return request.bodyToMono(DecodeRequest.class).flatMap(body -> {
            int context = engine.config().contextLength();
            if (!RequestIds.isValid(body.requestId()) || body.sampling() == null || body.promptTokens() < 1
                    || body.maxTokens() < 1 || (long) body.promptTokens() + body.maxTokens() > context
                    || !Double.isFinite(body.sampling().temperature()) || body.sampling().temperature() < 0
                    || !Double.isFinite(body.sampling().topP()) || body.sampling().topP() <= 0
                    || body.sampling().topP() > 1) {
                // Nothing was registered or reserved: a bad request leaves nothing behind.
                return ServerResponse.badRequest().bodyValue(DecodeEvent.error(
                        "requestId, sampling (finite temperature >= 0, top_p in (0, 1]), promptTokens >= 1 and "
                                + "maxTokens >= 1 within the context of " + context + " are required"));
            }
            return Mono.fromFuture(scheduler.submit(body)).flatMap(job -> {
                Flux<DecodeEvent> events = job.events().doOnCancel(() -> {
                    // The gateway closed the stream before the last token: the in-band cancellation path.
                    if (cancel.propagation().inBand()) {
                        registry.cancel(job.requestId(), CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
                    } else {
                        log.info("requestId={} stream closed by the gateway; in-band propagation is off",
                                job.requestId());
                    }
                });
                return ServerResponse.ok().contentType(NDJSON).body(events, DecodeEvent.class);
            }).onErrorResume(DecodeScheduler.NoCapacityException.class, e -> {
                log.info("requestId={} refused: {}", body.requestId(), e.getMessage());
                return ServerResponse.status(HttpStatus.SERVICE_UNAVAILABLE)
                        .header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, properties.retryAfter().toSeconds())))
                        .bodyValue(DecodeEvent.error(e.getMessage()));
            }).onErrorResume(DuplicateRegistrationException.class, e -> {
                // The ID is live here already (e.g. a gateway retry of an attempt this worker still holds): refuse
                // the second copy; never two jobs for one ID.
                log.info("requestId={} refused: already in flight on this worker", body.requestId());
                return ServerResponse.status(HttpStatus.CONFLICT).bodyValue(DecodeEvent.error(
                        "request " + body.requestId() + " is already in flight on this worker"));
            });
        }).switchIfEmpty(Mono.defer(() -> ServerResponse.badRequest()
                .bodyValue(DecodeEvent.error("the body is empty; a DecodeRequest is required"))));
    }
}
