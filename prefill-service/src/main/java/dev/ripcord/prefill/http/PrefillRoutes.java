package dev.ripcord.prefill.http;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
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
 * The prefill worker's internal HTTP API. The response to {@code POST /internal/v1/prefill} is the job's event
 * stream; when the gateway closes it early, that is the in-band cancellation signal.
 */
@Configuration(proxyBeanMethods = false)
public class PrefillRoutes {

    private static final Logger log = LoggerFactory.getLogger(PrefillRoutes.class);
    private static final MediaType NDJSON = MediaType.parseMediaType(InternalApi.NDJSON);

    @Bean
    RouterFunction<ServerResponse> prefillRouter(PrefillScheduler scheduler, CancellationRegistry registry,
                                                 CancelProperties cancel, PrefillProperties properties,
                                                 InferenceEngine engine, TransferAgent agent,
                                                SchedulerJournal journal) {
        return RouterFunctions.route()
                .POST(InternalApi.PREFILL, request -> prefill(request, scheduler, registry, cancel, properties,
                        engine.config().vocabSize()))
                .GET(InternalApi.STATUS, request -> ServerResponse.ok().bodyValue(new WorkerStatus("prefill",
                        scheduler.queued(), scheduler.running(), engine.pagePool().pagesLive(),
                        agent.stats().liveRegions(), agent.stats().liveSessions(), registry.liveRegistrations(),
                        scheduler.aborts(), scheduler.chunksComputed())))
                .GET(InternalApi.JOURNAL, request -> ServerResponse.ok().bodyValue(journal.since(
                        Long.parseLong(request.queryParam("after").orElse("0")))))
                .build();
    }

    private static Mono<ServerResponse> prefill(ServerRequest request, PrefillScheduler scheduler,
                                                CancellationRegistry registry, CancelProperties cancel,
                                                PrefillProperties properties, int vocabulary) {
        return request.bodyToMono(PrefillRequest.class).flatMap(body -> {
            String invalid = invalid(body, vocabulary);
            if (invalid != null) {
                // Nothing was registered or reserved: a bad request leaves nothing behind.
                return ServerResponse.badRequest().bodyValue(PrefillEvent.error(invalid));
            }
            PrefillJob job;
            try {
                job = scheduler.submit(body);
            } catch (PrefillScheduler.QueueFullException e) {
                log.info("requestId={} refused: {}", body.requestId(), e.getMessage());
                return ServerResponse.status(HttpStatus.SERVICE_UNAVAILABLE)
                        .header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, properties.retryAfter().toSeconds())))
                        .bodyValue(PrefillEvent.error(e.getMessage()));
            } catch (DuplicateRegistrationException e) {
                log.info("requestId={} refused: already in flight on this worker", body.requestId());
                return ServerResponse.status(HttpStatus.CONFLICT).bodyValue(PrefillEvent.error(
                        "request " + body.requestId() + " is already in flight on this worker"));
            } catch (IllegalArgumentException e) {
                return ServerResponse.badRequest().bodyValue(PrefillEvent.error(e.getMessage()));
            }
            Flux<PrefillEvent> events = job.events().doOnCancel(() -> {
                // The gateway closed the stream before DONE: the in-band cancellation path.
                if (cancel.propagation().inBand()) {
                    registry.cancel(job.requestId(), CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
                } else {
                    log.info("requestId={} stream closed by the gateway; in-band propagation is off, "
                            + "prefill continues", job.requestId());
                }
            });
            return ServerResponse.ok().contentType(NDJSON).body(events, PrefillEvent.class);
        }).switchIfEmpty(Mono.defer(() -> ServerResponse.badRequest()
                .bodyValue(PrefillEvent.error("the body is empty; a PrefillRequest is required"))));
    }

    /** What is wrong with {@code body} before any work is admitted for it, or null. */
    private static String invalid(PrefillRequest body, int vocabulary) {
        if (!RequestIds.isValid(body.requestId()) || body.tokens() == null || body.tokens().length == 0
                || body.transfer() == null || body.sampling() == null) {
            return "requestId, tokens, sampling and transfer are required";
        }
        for (int token : body.tokens()) {
            if (token < 0 || token >= vocabulary) {
                return "token ids must be in 0.." + (vocabulary - 1) + ", got " + token;
            }
        }
        double temperature = body.sampling().temperature();
        double topP = body.sampling().topP();
        if (!Double.isFinite(temperature) || temperature < 0 || !Double.isFinite(topP) || topP <= 0 || topP > 1) {
            return "sampling needs a finite temperature >= 0 and a top_p in (0, 1]";
        }
        return null;
    }
}
