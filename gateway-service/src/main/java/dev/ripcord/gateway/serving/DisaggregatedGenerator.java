package dev.ripcord.gateway.serving;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.openai.ApiException;
import dev.ripcord.gateway.openai.CancelCause;
import dev.ripcord.gateway.openai.ErrorCode;
import dev.ripcord.gateway.openai.GeneratedToken;
import dev.ripcord.gateway.openai.GenerationRequest;
import dev.ripcord.gateway.openai.TokenGenerator;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;

/**
 * The gateway's side of one disaggregated request: decode leg first (to reserve KV and learn where to push it),
 * then the prefill leg, then the decode leg's token stream relayed to the client.
 *
 * <p>Design note: both legs are plain streaming HTTP exchanges owned by one Reactor pipeline. Cancelling the Flux
 * this returns (client gone, stop string matched) disposes both exchanges, which closes their connections; the
 * workers observe that as their response stream being cancelled. That is the in-band cancellation path, and it
 * exists by construction: there is no second "context" for a leg that could outlive the request.
 *
 * <pre>
 *  subscribe ─► decode: POST /internal/v1/decode ─► RESERVED(transfer) ─┬─► prefill: POST /internal/v1/prefill
 *                                                                       │      QUEUED, STARTED, CHUNK.., DONE
 *                                  TOKEN, TOKEN, ..., TOKEN(finish) ◄───┘ (relayed to the client)
 * </pre>
 */
public final class DisaggregatedGenerator implements TokenGenerator {

    private static final Logger log = LoggerFactory.getLogger(DisaggregatedGenerator.class);
    private static final MediaType NDJSON = MediaType.parseMediaType(InternalApi.NDJSON);
    private static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);
    /** How workers' ERROR events start when the request was cancelled rather than failed. */
    private static final String WORKER_CANCELLED = "cancelled:";

    private final WebClient client;
    private final WorkerPool prefillPool;
    private final WorkerPool decodePool;
    private final RequestContexts contexts;

    public DisaggregatedGenerator(WebClient client, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts contexts) {
        this.client = client;
        this.prefillPool = prefillPool;
        this.decodePool = decodePool;
        this.contexts = contexts;
    }

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        return Flux.deferContextual(view -> {
            String id = request.requestId();
            RequestContext ctx;
            try {
                ctx = contexts.open(id, ApiKeys.identity(view), request.timeout()); // the caller owns it
            } catch (RequestContexts.DuplicateRequestException e) {
                return Flux.error(ApiException.of(ErrorCode.DUPLICATE_REQUEST_ID, null,
                        "a request with id %s is already in flight", id));
            }
            // One seed for both legs: prefill samples the first token, decode the rest.
            long seed = request.seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
            Sampling sampling = new Sampling(request.temperature(), request.topP(), seed);
            WorkerPool.Lease decodeLease = decodePool.acquire();
            log.info("requestId={} routed to decode={} promptTokens={} maxTokens={}", id,
                    decodeLease.instance().uri(), request.promptTokens().length, request.maxTokens());
            DecodeRequest decodeRequest = new DecodeRequest(id, request.promptTokens().length, request.maxTokens(),
                    sampling, request.ignoreEos());
            Flux<DecodeEvent> decodeEvents = ctx.link(client.post()
                    .uri(decodeLease.instance().uri().resolve(InternalApi.DECODE))
                    .header(InternalApi.REQUEST_ID_HEADER, id)
                    .contentType(MediaType.APPLICATION_JSON)
                    .accept(NDJSON)
                    .bodyValue(decodeRequest)
                    .exchangeToFlux(response -> events(response, DecodeEvent.class, "decode", id)));
            return decodeEvents
                    .switchOnFirst((first, events) -> {
                        DecodeEvent reserved = first.get();
                        if (!first.hasValue() || reserved.type() != DecodeEvent.Type.RESERVED) {
                            return events.flatMap(e -> Flux.<GeneratedToken>error(upstreamError(id, "decode",
                                    e.type() == DecodeEvent.Type.ERROR ? e.error() : "expected RESERVED, got " + e.type())));
                        }
                        Flux<GeneratedToken> tokens = events.skip(1).handle((e, sink) -> {
                            switch (e.type()) {
                                case TOKEN -> sink.next(new GeneratedToken(e.index(), e.token(), e.finishReason()));
                                case ERROR -> sink.error(upstreamError(id, "decode", e.error()));
                                case RESERVED -> sink.error(upstreamError(id, "decode", "RESERVED twice"));
                            }
                        });
                        return Flux.merge(tokens, prefill(ctx, request, sampling, reserved.transfer()));
                    })
                    .doFinally(signal -> {
                        decodeLease.close();
                        log.debug("requestId={} decode leg ended: {}", id, signal);
                    })
                    // The legs end early when the context is cancelled; the client then learns why.
                    .concatWith(Flux.defer(() -> ctx.cancelReason() == null ? Flux.empty()
                            : Flux.error(cancelled(id, ctx.cancelReason()))))
                    // Cancelled from downstream: the client went away (or a stop string matched, or it stalled).
                    .doOnCancel(() -> contexts.cancel(ctx, CancelCause.of(view)))
                    .doFinally(signal -> contexts.close(ctx));
        });
    }

    /** The prefill leg: its events carry no tokens, only progress and errors, so it contributes no elements. */
    private Flux<GeneratedToken> prefill(RequestContext ctx, GenerationRequest request, Sampling sampling,
                                         String transfer) {
        return Flux.deferContextual(view -> {
            String id = request.requestId();
            WorkerPool.Lease lease = prefillPool.acquire();
            log.info("requestId={} routed to prefill={}", id, lease.instance().uri());
            return ctx.link(client.post()
                    .uri(lease.instance().uri().resolve(InternalApi.PREFILL))
                    .header(InternalApi.REQUEST_ID_HEADER, id)
                    .contentType(MediaType.APPLICATION_JSON)
                    .accept(NDJSON)
                    .bodyValue(new PrefillRequest(id, request.promptTokens(), sampling, transfer))
                    .exchangeToFlux(response -> events(response, PrefillEvent.class, "prefill", id)))
                    .<GeneratedToken>handle((e, sink) -> {
                        switch (e.type()) {
                            case QUEUED -> log.debug("requestId={} prefill queued at position {}", id, e.position());
                            case STARTED -> log.debug("requestId={} prefill started", id);
                            case CHUNK -> log.trace("requestId={} prefill chunk {} ({} tokens)", id, e.chunk(),
                                    e.tokensDone());
                            case DONE -> log.debug("requestId={} prefill done, first token {}", id, e.firstToken());
                            case ERROR -> sink.error(upstreamError(id, "prefill", e.error()));
                        }
                    })
                    .doFinally(signal -> lease.close());
        });
    }

    private static <T> Flux<T> events(ClientResponse response, Class<T> type, String leg, String id) {
        HttpStatus status = HttpStatus.resolve(response.statusCode().value());
        if (response.statusCode().is2xxSuccessful()) {
            return response.bodyToFlux(type);
        }
        if (status == HttpStatus.SERVICE_UNAVAILABLE || status == HttpStatus.TOO_MANY_REQUESTS) {
            Duration retryAfter = retryAfter(response.headers().asHttpHeaders());
            return response.releaseBody().thenMany(Flux.error(ApiException.serviceUnavailable(retryAfter,
                    "the %s workers are at capacity; retry after %d s", leg, retryAfter.toSeconds())));
        }
        return response.bodyToMono(String.class).defaultIfEmpty("")
                .flatMapMany(body -> Flux.error(upstreamError(id, leg, response.statusCode() + " " + body)));
    }

    private static Duration retryAfter(HttpHeaders headers) {
        String value = headers.getFirst(HttpHeaders.RETRY_AFTER);
        if (value != null) {
            try {
                return Duration.ofSeconds(Math.max(1, Long.parseLong(value.trim())));
            } catch (NumberFormatException ignored) {
                // An HTTP-date or garbage: fall back to the default.
            }
        }
        return DEFAULT_RETRY_AFTER;
    }

    private static ApiException cancelled(String id, CancelReason reason) {
        return reason == CancelReason.DEADLINE
                ? ApiException.of(ErrorCode.TIMEOUT, "timeout", "request %s ran past its deadline", id)
                : ApiException.of(ErrorCode.REQUEST_CANCELLED, null, "request %s was cancelled (%s)", id,
                        reason.name().toLowerCase(java.util.Locale.ROOT));
    }

    private static ApiException upstreamError(String id, String leg, String detail) {
        if (detail != null && detail.startsWith(WORKER_CANCELLED)) {
            // The worker aborted it on a cancel it received (e.g. one published before the request arrived).
            log.info("requestId={} {} leg cancelled by the worker: {}", id, leg, detail);
            return ApiException.of(ErrorCode.REQUEST_CANCELLED, null, "request %s was cancelled (%s)", id,
                    detail.substring(WORKER_CANCELLED.length()).trim().toLowerCase(java.util.Locale.ROOT));
        }
        log.warn("requestId={} {} leg failed: {}", id, leg, detail);
        return ApiException.of(ErrorCode.INTERNAL_ERROR, null, "the %s worker failed this request", leg);
    }

}
