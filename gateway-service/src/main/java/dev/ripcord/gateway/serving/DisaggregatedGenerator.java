package dev.ripcord.gateway.serving;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.lifecycle.RequestPhase;
import dev.ripcord.gateway.generation.CachedPromptTokens;
import dev.ripcord.gateway.generation.TerminalFrames;
import dev.ripcord.gateway.generation.Admission;
import dev.ripcord.gateway.generation.CancelCause;
import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.DuplicateRequestIdException;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationException;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.RequestTimings;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.generation.TokenGenerator;
import dev.ripcord.gateway.generation.WarmUp;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.Affinity;
import dev.ripcord.gateway.routing.WorkerInstance;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.gateway.routing.prefix.PrefixRouting;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.Pairing;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.ContextView;

/**
 * The gateway's side of one disaggregated request: decode leg first (to reserve KV and learn where to push it),
 * then the prefill leg, then the decode leg's token stream relayed to the client.
 *
 * <p>Design note: both legs are plain streaming HTTP exchanges owned by one Reactor pipeline. Cancelling the Flux
 * this returns (client gone, stop string matched) disposes both exchanges, which closes their connections; the
 * workers observe that as their response stream being cancelled. That is the in-band cancellation path, and it
 * exists by construction: there is no second "context" for a leg that could outlive the request. Before closing a
 * leg the worker has answered, the gateway tells it the request's cancel reason ({@link InBandCancel}), so the
 * worker records the real reason, not just a closed connection.
 *
 * <pre>
 *  subscribe ─► decode: POST /internal/v1/decode ─► RESERVED(transfer) ─┬─► prefill: POST /internal/v1/prefill
 *                                                                       │      QUEUED, STARTED, CHUNK.., DONE
 *                                  TOKEN, TOKEN, ..., TOKEN(finish) ◄───┘ (relayed to the client)
 * </pre>
 *
 * <p>Each leg goes through a {@link WorkerLeg}: routing past open breakers and full bulkheads, a timeout on the
 * worker's admission event only, and retries only before admission (decode on any worker fault; prefill only when
 * the worker never saw the request, because the transfer descriptor is single-use). The whole leg, retries and
 * backoffs included, is linked to the request's context.
 *
 * <p>Once the answer is decided, no leg may hold the client: after decode's final token its stream must end, and
 * after decode's stream ends the prefill stream must have ended too (prefill's DONE precedes decode's first token).
 * Each gets {@link #LEG_END_GRACE}; a leg still open after that is closed with a WARN naming it, and the client gets
 * its complete answer. This never fires in a healthy system; it bounds the damage of a worker that forgets to end a
 * stream, and says which one did. Likewise a decode stream that sends no token for {@link #TOKEN_GAP_LIMIT} (a
 * decode step takes milliseconds) is ended with an error, and its legs closed: between two tokens, and from
 * prefill's {@code DONE} to the first token (the KV has been sent by then; what is left is its arrival and one
 * step). Before prefill's end nothing is cut on time alone: a prompt may wait long in a busy prefill queue, and
 * the request's deadline bounds that. So once prefill is done, every request ends with an answer or an error,
 * whatever a worker's stream does.
 */
public final class DisaggregatedGenerator implements TokenGenerator {

    private static final Logger log = LoggerFactory.getLogger(DisaggregatedGenerator.class);
    private static final MediaType NDJSON = MediaType.parseMediaType(InternalApi.NDJSON);
    /** How long a leg may stay open after the answer is decided (see the class comment). */
    static final Duration LEG_END_GRACE = Duration.ofSeconds(10);
    /**
     * The longest a started decode stream may go without a token (see the class comment). Above the client stall
     * timeout's default (60 s), so a client that stops reading, which also stops the tokens through backpressure, is
     * ended as stalled first.
     */
    static final Duration TOKEN_GAP_LIMIT = Duration.ofSeconds(120);

    private final WebClient client;
    private final Scheduler timer;
    private final WorkerLeg prefillLeg;
    private final WorkerLeg decodeLeg;
    private final RequestContexts contexts;
    private final Duration defaultRetryAfter;
    private final String modelIdentity;
    private final PrefixRouting prefixRouting;

    public DisaggregatedGenerator(WebClient client, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts contexts, WorkerResilience resilience) {
        this(client, prefillPool, decodePool, contexts, resilience, Schedulers.parallel());
    }

    /**
     * @param timer runs the admission timeouts and retry backoffs (tests pass a virtual-time scheduler)
     */
    public DisaggregatedGenerator(WebClient client, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts contexts, WorkerResilience resilience, Scheduler timer) {
        this(client, prefillPool, decodePool, contexts, resilience, timer, null);
    }

    /**
     * @param modelIdentity the served model's identity ({@code Pairing.modelIdentity}); a decode worker whose
     *                      {@code RESERVED} names another model is not paired. Null: not checked (tests)
     */
    public DisaggregatedGenerator(WebClient client, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts contexts, WorkerResilience resilience, Scheduler timer,
                                  String modelIdentity) {
        this(client, prefillPool, decodePool, contexts, resilience, timer, modelIdentity, null);
    }

    /**
     * @param prefixRouting each prompt's affinity for the prefill workers (their cached prefix of it); null: prefill
     *                      is routed by its pool's policy without one
     */
    public DisaggregatedGenerator(WebClient client, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts contexts, WorkerResilience resilience, Scheduler timer,
                                  String modelIdentity, PrefixRouting prefixRouting) {
        this.modelIdentity = modelIdentity;
        this.prefixRouting = prefixRouting;
        this.client = client;
        this.timer = timer;
        this.prefillLeg = WorkerLeg.prefill(prefillPool, resilience, timer);
        this.decodeLeg = WorkerLeg.decode(decodePool, resilience, timer);
        this.contexts = contexts;
        this.defaultRetryAfter = resilience.properties().retryAfter();
    }

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        return Flux.deferContextual(view -> {
            String id = request.requestId();
            RequestContext ctx = open(request, view); // thrown, it errors the Flux (deferContextual)
            RequestTimings timings = RequestTimings.of(view);
            timings.mark("gateway.accepted");
            // One seed for both legs: prefill samples the first token, decode the rest.
            long seed = seedOf(request);
            log.info("requestId={} internalId={} accepted: promptTokens={} maxTokens={}", id, ctx.internalId(),
                    request.promptTokens().length, request.maxTokens());
            AtomicInteger sent = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            // The workers know the request by its internal ID only: a cancel can never reach another request.
            return choice(ctx, request, ctx.internalId(), sampling(request, seed), timings)
                    .transform(tokens -> Sabotaged.tokens(tokens, WarmUp.marked(view)))
                    .doFinally(signal -> log.debug("requestId={} decode leg ended: {}", id, signal))
                    // The legs end early when the context is cancelled; the client then learns why.
                    .concatWith(Flux.defer(() -> ctx.cancelReason() == null ? Flux.empty()
                            : Flux.error(cancelled(id, ctx.cancelReason()))))
                    // Cancelled from downstream: the client went away (or a stop string matched, or it stalled).
                    .doOnCancel(() -> {
                        String finish = CancelCause.finishOf(view);
                        if (finish != null) {
                            // A stop string matched: the answer is complete. Not a cancel, and no client left.
                            ctx.finishedAtTheEdge(finish);
                            contexts.finishEarly(ctx);
                        } else {
                            contexts.cancel(ctx, CancelCause.of(view));
                        }
                    })
                    .doOnNext(token -> sent.incrementAndGet())
                    .doOnError(failure::set)
                    .doFinally(signal -> contexts.close(ctx, failure.get(), sent.get()));
        });
    }

    /**
     * {@code n > 1}: one context for the request (its ID, its owner, its deadline: a cancel by ID, the deadline or
     * the client going away stops every choice), and per choice its own pair of legs, as for {@code n = 1}, under
     * the worker-facing ID {@link RequestIds#choiceId} of the request's internal ID, which no client ID can forge,
     * and the seed {@link Sampling#choiceSeed}. Cancelling one choice's
     * Flux (a stop string matched in it) closes that choice's legs only. Out-of-band cancels are published for every
     * choice's ID, since each is registered under its own ID at the workers.
     *
     * <p>A choice that fails (a worker refused it, at capacity say, or failed it) fails the request: the caller's
     * merge ends with that error and cancels this Flux, and the other choices are cancelled with
     * {@link CancelReason#UPSTREAM_ERROR}, which their workers are told before their streams close. No choice waits
     * on a sibling that has already lost, and the request is recorded as failed with that error, not as a client
     * that went away. A choice cancelled from outside (by ID, or by its worker) is not a failure: it ends as
     * {@code abort} and the others go on.
     */
    @Override
    public Flux<Flux<GeneratedToken>> generateChoices(GenerationRequest request) {
        if (request.n() == 1) {
            return Flux.just(generate(request));
        }
        return Flux.deferContextual(view -> {
            String id = request.requestId();
            RequestContext ctx = open(request, view); // thrown, it errors the Flux (deferContextual)
            long seed = seedOf(request);
            log.info("requestId={} internalId={} accepted: promptTokens={} maxTokens={} n={}", id, ctx.internalId(),
                    request.promptTokens().length, request.maxTokens(), request.n());
            ctx.cancelled().subscribe(reason -> {
                for (int i = 1; i < request.n(); i++) {
                    contexts.publish(RequestIds.choiceId(ctx.internalId(), i), reason);
                }
            });
            Sinks.Empty<Void> allEnded = Sinks.empty();
            AtomicInteger live = new AtomicInteger(request.n());
            AtomicReference<Throwable> failure = new AtomicReference<>(); // the first choice that failed
            List<Flux<GeneratedToken>> choices = new ArrayList<>(request.n());
            for (int i = 0; i < request.n(); i++) {
                String wireId = RequestIds.choiceId(ctx.internalId(), i);
                choices.add(choice(ctx, request, wireId, sampling(request, Sampling.choiceSeed(seed, i)),
                        RequestTimings.of(view))
                        .doFinally(signal -> log.debug("requestId={} choice {} ended: {}", id, wireId, signal))
                        .concatWith(Flux.defer(() -> ctx.cancelReason() == null ? Flux.empty()
                                : Flux.error(cancelled(id, ctx.cancelReason()))))
                        // Before the error travels on: the caller's merge cancels the rest as it receives it.
                        .doOnError(e -> {
                            if (!isCancel(e) && failure.compareAndSet(null, e)) {
                                log.info("requestId={} choice {} failed ({}); cancelling the other choices", id,
                                        wireId, e.toString());
                            }
                        })
                        .doFinally(signal -> {
                            if (live.decrementAndGet() == 0) {
                                allEnded.tryEmitEmpty();
                            }
                        }));
            }
            return Flux.fromIterable(choices)
                    .concatWith(allEnded.asMono().then(Mono.empty()))
                    .doOnCancel(() -> contexts.cancel(ctx, failure.get() != null ? CancelReason.UPSTREAM_ERROR
                            : CancelCause.of(view)))
                    .doFinally(signal -> contexts.close(ctx, failure.get(), ctx.completionTokens()));
        });
    }

    /**
     * Opens the request's context, owned by the caller ({@link ApiKeys#identity}).
     *
     * @throws DuplicateRequestIdException if a request with its ID is in flight here
     */
    private RequestContext open(GenerationRequest request, ContextView view) {
        RequestContext ctx;
        try {
            ctx = contexts.open(request.requestId(), ApiKeys.identity(view), request.timeout(), request.model(),
                    request.promptTokens().length, WarmUp.marked(view));
        } catch (RequestContexts.DuplicateRequestException e) {
            throw new DuplicateRequestIdException(request.requestId());
        }
        // The endpoint's writer says each terminal frame it writes: the lifecycle log's TERMINAL_FRAME for the audit.
        contexts.recordTerminalFrames(ctx, TerminalFrames.of(view));
        return ctx;
    }

    /**
     * The request's seed, or a random one: one per request, shared by its legs (and choices derive theirs). Not a
     * secret (sampling, not identity), so the cheap, contention-free generator serves.
     */
    private static long seedOf(GenerationRequest request) {
        return request.seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
    }

    /** What the workers sample with: the request's knobs, off ones left out, and the choice's seed. */
    static Sampling sampling(GenerationRequest request, long seed) {
        SamplingOptions o = request.sampling();
        Map<Integer, Double> bias = o.logitBias().isEmpty() ? null : o.logitBias();
        return new Sampling(request.temperature(), request.topP(), seed,
                o.topK() > 0 ? o.topK() : null,
                o.minP() > 0 ? o.minP() : null,
                o.repetitionPenalty() != 1 ? o.repetitionPenalty() : null,
                o.presencePenalty() != 0 ? o.presencePenalty() : null,
                o.frequencyPenalty() != 0 ? o.frequencyPenalty() : null,
                bias,
                o.wantsLogprobs() ? o.logprobs() : null);
    }

    /**
     * One choice: the decode leg, then the prefill leg, relaying decode's tokens; linked to {@code ctx}. Marks each
     * leg's hops on {@code timings} (the first choice's, when there are several).
     */
    private Flux<GeneratedToken> choice(RequestContext ctx, GenerationRequest request, String id, Sampling sampling,
                                        RequestTimings timings) {
        int[] stopTokenIds = request.sampling().stopTokenIds().stream().mapToInt(Integer::intValue).toArray();
        DecodeRequest decodeRequest = new DecodeRequest(id, request.promptTokens().length, request.maxTokens(),
                sampling, request.ignoreEos(), stopTokenIds.length == 0 ? null : stopTokenIds,
                sampling.readsPrompt() ? request.promptTokens() : null);
        Flux<DecodeEvent> decodeEvents = ctx.link(decodeLeg.events(id, instance -> routed(id, "decode", instance, timings,
                InBandCancel.tellWhyBeforeClosing(client, instance, id, ctx::cancelReason, client.post()
                        .uri(instance.uri().resolve(InternalApi.DECODE))
                        .header(RequestIds.HEADER, id)
                        .contentType(MediaType.APPLICATION_JSON)
                        .accept(NDJSON)
                        .bodyValue(decodeRequest)
                        .exchangeToFlux(response -> events(response, DecodeEvent.class))))));
        return decodeEvents
                .switchOnFirst((first, events) -> {
                    if (!first.hasValue() || !(first.get() instanceof DecodeEvent.Reserved reserved)) {
                        return events.flatMap(e -> Flux.<GeneratedToken>error(
                                workerEnded(ctx.requestId(), id, "decode", e)));
                    }
                    timings.mark("decode.reserved");
                    Pairing pairing = reserved.pairing();
                    if (modelIdentity != null && pairing != null && !modelIdentity.equals(pairing.model())) {
                        log.warn("internalId={} decode worker serves model {}, this gateway {}: not paired; "
                                + "ending the request with an error", id, pairing.model(), modelIdentity);
                        return Flux.error(new GenerationFailedException("the decode worker serves model "
                                + pairing.model() + ", the gateway " + modelIdentity, null));
                    }
                    Sinks.One<Boolean> decodeEnded = Sinks.one();
                    Sinks.One<Boolean> prefillDone = Sinks.one();
                    Flux<GeneratedToken> tokens = events.skip(1).<GeneratedToken>handle((e, sink) -> {
                        if (e instanceof DecodeEvent.Token t) {
                            timings.mark("decode.token.first");
                            if (t.finishReason() != null) {
                                timings.mark("decode.token.last");
                            }
                            ctx.tokenRelayed(t.finishReason());
                            sink.next(new GeneratedToken(t.index(), t.token(), t.finishReason(),
                                    t.logprobs()));
                        } else {
                            sink.error(workerEnded(ctx.requestId(), id, "decode", e));
                        }
                    })
                            // The first token is due a step after prefill's end (the KV is on its way then); after
                            // the final token the stream's end is due at once; between two tokens, a step.
                            .timeout(prefillDone.asMono().then(Mono.delay(TOKEN_GAP_LIMIT, timer))
                                    .then(Mono.error(() -> {
                                        log.warn("internalId={} decode stream sent no token for {} after prefill "
                                                + "finished; ending the request with an error", id, TOKEN_GAP_LIMIT);
                                        return new GenerationFailedException("the decode worker sent no first token "
                                                + TOKEN_GAP_LIMIT.toSeconds() + " s after prefill finished", null);
                                    })), token -> token.finishReason() == null
                                    ? Mono.delay(TOKEN_GAP_LIMIT, timer).then(Mono.error(() -> {
                                        log.warn("internalId={} decode stream sent no token for {}; ending the "
                                                + "request with an error", id, TOKEN_GAP_LIMIT);
                                        return new GenerationFailedException("the decode worker stopped sending "
                                                + "tokens for " + TOKEN_GAP_LIMIT.toSeconds() + " s", null);
                                    }))
                                    : Mono.delay(LEG_END_GRACE, timer), Flux.defer(() -> {
                                        log.warn("internalId={} decode stream still open {} after its final "
                                                + "token; closing it", id, LEG_END_GRACE);
                                        return Flux.empty();
                                    }))
                            .doOnComplete(() -> decodeEnded.tryEmitValue(Boolean.TRUE));
                    Flux<GeneratedToken> prefill = prefill(ctx, id, request, sampling, reserved.transfer(), pairing, timings,
                            () -> prefillDone.tryEmitValue(Boolean.TRUE))
                            .doOnComplete(() -> log.debug("internalId={} prefill leg ended", id))
                            // Prefill's DONE precedes decode's first token: once decode is over, so is prefill.
                            .takeUntilOther(decodeEnded.asMono().delayElement(LEG_END_GRACE, timer)
                                    .doOnNext(ended -> log.warn("internalId={} prefill stream still open {} after "
                                            + "decode ended; closing it", id, LEG_END_GRACE)));
                    return Flux.merge(tokens, prefill);
                });
    }

    /**
     * The prefill leg: its events carry no tokens, only progress and errors, so it contributes no elements;
     * {@code onDone} runs at its {@code DONE}.
     */
    private Flux<GeneratedToken> prefill(RequestContext ctx, String id, GenerationRequest request, Sampling sampling,
                                         String transfer, Pairing pairing, RequestTimings timings,
                                         Runnable onDone) {
        return Flux.deferContextual(view -> {
            // Decode's pairing travels to prefill, which refuses (409 pairing_mismatch) unless it is its own.
            PrefillRequest prefillRequest = new PrefillRequest(id, request.promptTokens(), sampling, transfer,
                    pairing, request.cacheSalt());
            // The worker holding the longest cached prefix of the prompt, weighed against load.
            Affinity affinity = prefixRouting == null ? Affinity.NONE
                    : prefixRouting.affinity(request.promptTokens(), request.cacheSalt());
            return ctx.link(prefillLeg.events(id, affinity, instance -> routed(id, "prefill", instance, timings,
                    InBandCancel.tellWhyBeforeClosing(client, instance, id, ctx::cancelReason, client.post()
                            .uri(instance.uri().resolve(InternalApi.PREFILL))
                            .header(RequestIds.HEADER, id)
                            .contentType(MediaType.APPLICATION_JSON)
                            .accept(NDJSON)
                            .bodyValue(prefillRequest)
                            .exchangeToFlux(response -> events(response, PrefillEvent.class))))))
                    .<GeneratedToken>handle((e, sink) -> {
                        switch (e) {
                            case PrefillEvent.Queued q -> {
                                timings.mark("prefill.queued");
                                Admission.admitted(view); // both legs hold it now: the edge may send its headers
                                ctx.moveTo(RequestPhase.QUEUED);
                                log.debug("internalId={} prefill queued at position {}", id, q.position());
                            }
                            case PrefillEvent.Started s -> {
                                timings.mark("prefill.started");
                                ctx.moveTo(RequestPhase.PREFILL);
                                log.debug("internalId={} prefill started", id);
                            }
                            case PrefillEvent.Chunk c -> {
                                timings.mark("prefill.chunk");
                                ctx.moveTo(RequestPhase.PREFILL);
                                log.trace("internalId={} prefill chunk {} ({} tokens)", id, c.chunk(), c.tokensDone());
                            }
                            case PrefillEvent.Done d -> {
                                timings.mark("prefill.done");
                                CachedPromptTokens.of(view).record(d.cached());
                                onDone.run();
                                ctx.moveTo(RequestPhase.TRANSFER);
                                log.debug("internalId={} prefill done, first token {}, {} prompt tokens cached", id,
                                        d.firstToken(), d.cached());
                            }
                            case Cancelled c -> sink.error(workerEnded(ctx.requestId(), id, "prefill", c));
                            case Failed f -> sink.error(workerEnded(ctx.requestId(), id, "prefill", f));
                        }
                    });
        });
    }

    /** Records the leg's route on the lifecycle log as its exchange starts (once per attempt). */
    private <T> Flux<T> routed(String id, String role, WorkerInstance instance, RequestTimings timings,
                               Flux<T> exchange) {
        return Flux.defer(() -> {
            timings.mark(role + ".sent");
            contexts.routed(id, role, instance.uri().getAuthority());
            return exchange;
        });
    }

    /** A worker's answer: its event stream if it admitted the request, else a {@link WorkerRefusedException}. */
    private <T> Flux<T> events(ClientResponse response, Class<T> type) {
        if (response.statusCode().is2xxSuccessful()) {
            return response.bodyToFlux(type);
        }
        int status = response.statusCode().value();
        Duration retryAfter = status == HttpStatus.SERVICE_UNAVAILABLE.value()
                || status == HttpStatus.TOO_MANY_REQUESTS.value()
                ? retryAfter(response.headers().asHttpHeaders()) : null;
        return response.bodyToMono(String.class).defaultIfEmpty("")
                .flatMapMany(body -> Flux.error(new WorkerRefusedException(status, retryAfter, body)));
    }

    private Duration retryAfter(HttpHeaders headers) {
        String value = headers.getFirst(HttpHeaders.RETRY_AFTER);
        if (value != null) {
            try {
                return Duration.ofSeconds(Math.max(1, Long.parseLong(value.trim())));
            } catch (NumberFormatException ignored) {
                // An HTTP-date or garbage: fall back to the default.
            }
        }
        return defaultRetryAfter;
    }

    /** Whether a choice ended because the request (or its worker's job) was cancelled, rather than failed. */
    private static boolean isCancel(Throwable failure) {
        return failure instanceof RequestCancelledException || failure instanceof DeadlineExceededException;
    }

    private static GenerationException cancelled(String id, CancelReason reason) {
        return reason == CancelReason.DEADLINE
                ? new DeadlineExceededException(id)
                : RequestCancelledException.of(id, reason);
    }

    /**
     * A worker's stream ended other than as expected: a typed {@link Cancelled} (the worker carried out a cancel it
     * received, e.g. one published before the request arrived) is the client's cancel, except a worker's own
     * {@code SHUTDOWN}, which is the server's doing: unavailable, worth a retry; a {@link Failed}, or an event out of
     * place, is a worker fault.
     */
    private GenerationException workerEnded(String id, String wireId, String leg, Object event) {
        if (event instanceof Cancelled c) {
            log.info("internalId={} {} leg cancelled by the worker: {} via {}", wireId, leg, c.reason(), c.source());
            if (c.reason() == CancelReason.SHUTDOWN) {
                return new WorkerUnavailableException("request %s was interrupted: the %s worker shut down (shutdown); "
                        .formatted(id, leg) + "retry it", defaultRetryAfter, null);
            }
            return RequestCancelledException.of(id, c.reason());
        }
        if (event instanceof Failed f && Failed.BUSY.equals(f.code())) {
            // The worker kept the request queued and could not start it in time (past its maximum wait): nothing
            // of it was computed, and a retry later may succeed: 503 with Retry-After.
            log.info("internalId={} {} leg ended unserved: {} ({})", wireId, leg, f.message(), f.code());
            Duration after = f.retryAfterSeconds() != null ? Duration.ofSeconds(f.retryAfterSeconds())
                    : defaultRetryAfter;
            return new WorkerUnavailableException("the %s worker could not start this request in time; retry after %d s"
                    .formatted(leg, Math.max(1, after.toSeconds())), after, null);
        }
        if (event instanceof Failed f) {
            log.warn("internalId={} {} leg failed: {} ({})", wireId, leg, f.message(), f.code());
        } else {
            log.warn("internalId={} {} leg sent {} out of place", wireId, leg, event);
        }
        return new GenerationFailedException("the " + leg + " worker failed this request", null);
    }

}
