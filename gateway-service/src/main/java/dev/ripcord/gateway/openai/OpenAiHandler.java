package dev.ripcord.gateway.openai;

import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.UnsupportedCharsetException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import dev.ripcord.cancel.Sabotage;
import dev.ripcord.gateway.generation.CachedPromptTokens;
import dev.ripcord.gateway.generation.TerminalFrames;
import dev.ripcord.gateway.generation.WarmUp;
import dev.ripcord.gateway.generation.Admission;
import dev.ripcord.gateway.generation.CancelCause;
import dev.ripcord.gateway.generation.RequestTimings;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.gateway.generation.TextDelta;
import dev.ripcord.gateway.generation.TextDeltas;
import dev.ripcord.gateway.generation.TokenGenerator;
import io.netty.channel.Channel;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.http.ReactiveHttpOutputMessage;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.BodyInserter;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.netty.Connection;
import reactor.util.context.Context;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import dev.ripcord.gateway.generation.GenerationRequest.Kind;

/**
 * The request lifecycle of the OpenAI surface, in order:
 *
 * <ol>
 *   <li><b>Identify</b>: done before this handler, by {@link RequestIdFilter} (first filter): the request ID is on
 *       the exchange, on the response and in the Reactor context already.</li>
 *   <li><b>Check headers</b>: {@code Content-Type} (415), {@code Accept} (406), {@code X-Ripcord-Timeout} (400).</li>
 *   <li><b>Read</b> the body, at most {@code max-body-size} bytes (413), without blocking.</li>
 *   <li><b>Parse and tokenize</b> on the parallel scheduler ({@link RequestParser}): any client mistake is a 4xx
 *       {@link ApiException}.</li>
 *   <li><b>Generate</b>: subscribe to {@link TokenGenerator#generate}; {@link TextDeltas} detokenizes, applies stop
 *       strings and cancels the generation when one matches.</li>
 *   <li><b>Answer</b>: SSE events, or one JSON body once the generation ends ({@link ResponseShapes}).</li>
 * </ol>
 *
 * <p>Errors: anything raised before the first byte of the response (including a generator that fails before its
 * first token) reaches {@link OpenAiErrorHandler} and becomes a proper status with an OpenAI body. A stream that
 * fails after it started ends with an error event and {@code [DONE]}. A stream holds at most
 * {@link StreamGuard#CAPACITY} events for a slow client; one that accepts nothing for {@code stream-stall-timeout} is
 * cancelled ({@code CLIENT_STALLED}) and its connection closed ({@link StreamGuard}).
 *
 * <p>Every departure is noticed. The client's connection closing (a client that left, or the kernel giving up on a
 * half-open connection: TCP keepalive, unacknowledged bytes) cancels the generation at once, streamed or not, before
 * the first token or after, whether or not anything is being written ({@link #whenClosed}); it is logged and counted
 * as {@code closed}, or as {@code idle_close} when nothing had been sent on the connection for
 * {@code idle-close-threshold} (a proxy's idle timeout, most likely). An admitted stream sends an SSE comment
 * ({@value #HEARTBEAT_TEXT}) every {@code sse-heartbeat} whatever the generation is doing, so an idle proxy never cuts
 * it and a client that stopped reading without closing backs its bytes up into a stall.
 */
final class OpenAiHandler {

    private static final Logger log = LoggerFactory.getLogger(OpenAiHandler.class);

    private final TokenGenerator generator;
    private final TextCodec codec;
    private final OpenAiProperties properties;
    private final Clock clock;
    private final RequestParser parser;
    private final StreamGuard streamGuard;
    private final RequestOutcome.Listener outcomes;
    private final long startedAt;
    private final Scheduler templateRender;

    /** The SSE comment an admitted stream sends every {@code sse-heartbeat}; every SSE client skips it. */
    static final String HEARTBEAT_TEXT = ": ping";
    private static final byte[] HEARTBEAT = (HEARTBEAT_TEXT + "\n\n").getBytes(StandardCharsets.US_ASCII);

    /** Bodies up to this size are parsed on the thread that read them ({@link #parseOn}). */
    static final int INLINE_PARSE_BYTES = 512;

    OpenAiHandler(TokenGenerator generator, TextCodec codec, OpenAiProperties properties, Clock clock,
            StreamGuard streamGuard) {
        this(generator, codec, properties, clock, streamGuard, RequestOutcome.Listener.NONE);
    }

    /** @param outcomes hears how each generation ended (the metrics), once per generation */
    OpenAiHandler(TokenGenerator generator, TextCodec codec, OpenAiProperties properties, Clock clock,
            StreamGuard streamGuard, RequestOutcome.Listener outcomes) {
        this(generator, codec, properties, clock, streamGuard, outcomes, Schedulers.boundedElastic());
    }

    /**
     * @param outcomes       hears how each generation ended (the metrics), once per generation
     * @param templateRender where chat requests are parsed when the model has a Jinja chat template: a bounded
     *                       pool of its own, so that templates, which are code from the model file, never run on an
     *                       event loop and can occupy only its threads
     */
    OpenAiHandler(TokenGenerator generator, TextCodec codec, OpenAiProperties properties, Clock clock,
            StreamGuard streamGuard, RequestOutcome.Listener outcomes, Scheduler templateRender) {
        this.templateRender = templateRender;
        this.outcomes = outcomes;
        this.generator = generator;
        this.codec = codec;
        this.properties = properties;
        this.clock = clock;
        this.streamGuard = streamGuard;
        this.parser = new RequestParser(codec, properties.maxTimeout(), properties.maxN());
        this.startedAt = clock.instant().getEpochSecond();
    }

    Mono<ServerResponse> completions(ServerRequest http) {
        return serve(http, Kind.COMPLETION);
    }

    Mono<ServerResponse> chatCompletions(ServerRequest http) {
        return serve(http, Kind.CHAT);
    }

    private Mono<ServerResponse> serve(ServerRequest http, Kind kind) {
        String requestId = RequestIdFilter.requestId(http.exchange());
        RequestTimings timings = RequestTimings.asked(http.headers().firstHeader(RequestTimings.HEADER))
                ? RequestTimings.recording() : RequestTimings.NONE;
        timings.mark("gateway.received");
        return Mono.fromCallable(() -> checkHeaders(http))
                .flatMap(headerTimeout -> readBody(http)
                        .flatMap(body -> parseOn(kind, body))
                        .map(body -> parser.parse(kind, body, requestId, headerTimeout.orElse(null))))
                .doOnNext(request -> {
                    timings.mark("gateway.parsed");
                    log.debug("requestId={} accepted kind={} promptTokens={} maxTokens={} stream={} n={}",
                            requestId, kind, request.promptTokens().length, request.maxTokens(), request.stream(),
                            request.n());
                })
                .flatMap(request -> request.stream() ? stream(request, http, timings) : complete(request, http));
    }

    /** Validates the headers; returns the {@code X-Ripcord-Timeout} deadline if any. */
    private Optional<Duration> checkHeaders(ServerRequest http) {
        checkContentType(http);
        checkAccept(http);
        return Optional.ofNullable(parser.timeoutHeader(http.headers().firstHeader(RequestParser.TIMEOUT_HEADER)));
    }

    /** JSON in UTF-8; a request without {@code Content-Type} is read as JSON too (curl-style clients omit it). */
    private static void checkContentType(ServerRequest http) {
        String header = http.headers().firstHeader(HttpHeaders.CONTENT_TYPE);
        if (header == null) {
            return;
        }
        boolean supported;
        try {
            MediaType type = MediaType.parseMediaType(header);
            supported = MediaType.APPLICATION_JSON.isCompatibleWith(type) && !type.isWildcardSubtype()
                    && (type.getCharset() == null || type.getCharset().equals(StandardCharsets.UTF_8));
        } catch (InvalidMediaTypeException | UnsupportedCharsetException | IllegalCharsetNameException e) {
            supported = false;
        }
        if (!supported) {
            throw ApiException.of(ErrorCode.UNSUPPORTED_MEDIA_TYPE, null,
                    "Unsupported Content-Type; send application/json in UTF-8.");
        }
    }

    /** 406 only when {@code Accept} rules out both JSON and SSE: OpenAI's SDKs send JSON even for streams. */
    private static void checkAccept(ServerRequest http) {
        boolean acceptable;
        try {
            List<MediaType> accepted = http.headers().accept();
            acceptable = accepted.isEmpty() || accepted.stream().anyMatch(type ->
                    type.isCompatibleWith(MediaType.APPLICATION_JSON) || type.isCompatibleWith(MediaType.TEXT_EVENT_STREAM));
        } catch (InvalidMediaTypeException e) {
            acceptable = false; // an unreadable Accept header names nothing we produce
        }
        if (!acceptable) {
            throw ApiException.of(ErrorCode.NOT_ACCEPTABLE, null,
                    "The Accept header rules out both application/json and text/event-stream.");
        }
    }

    /**
     * Where a body is parsed and tokenized. Both cost CPU in proportion to the body, so a large body goes off the event
     * loop; a body of at most {@value #INLINE_PARSE_BYTES} bytes (a short prompt: the requests whose time to first
     * token the stack's own overhead dominates) is parsed right here, which spares it a thread hand-off, worth
     * milliseconds on a busy machine, for well under a millisecond of tokenizing.
     */
    Mono<byte[]> parseOn(Kind kind, byte[] body) {
        if (kind == Kind.CHAT && codec.chatTemplate() != null) {
            // A Jinja template renders within its time and step budget, but that budget is far above the inline
            // threshold's cost, so chat with a template always leaves the event loop, whatever the body's size.
            return Mono.just(body).publishOn(templateRender)
                    .onErrorMap(RejectedExecutionException.class, e -> ApiException.serviceUnavailable(
                            Duration.ofSeconds(1), "Too many chat templates are being rendered; retry shortly."));
        }
        return parseOn(body);
    }

    static Mono<byte[]> parseOn(byte[] body) {
        return body.length <= INLINE_PARSE_BYTES ? Mono.just(body) : Mono.just(body).publishOn(Schedulers.parallel());
    }

    private Mono<byte[]> readBody(ServerRequest http) {
        int limit = properties.maxBodyBytes();
        long declared = http.headers().contentLength().orElse(-1);
        if (declared > limit) {
            return Mono.error(tooLarge(limit));
        }
        return DataBufferUtils.join(http.body(BodyExtractors.toDataBuffers()), limit)
                .map(OpenAiHandler::drain)
                .onErrorMap(DataBufferLimitException.class, e -> tooLarge(limit))
                .defaultIfEmpty(new byte[0]);
    }

    private static byte[] drain(DataBuffer buffer) {
        try {
            byte[] bytes = new byte[buffer.readableByteCount()];
            buffer.read(bytes);
            return bytes;
        } finally {
            DataBufferUtils.release(buffer);
        }
    }

    private static ApiException tooLarge(int limit) {
        return ApiException.of(ErrorCode.REQUEST_TOO_LARGE, null,
                "The request body is larger than the limit of %d bytes.", limit);
    }

    // --- answers ------------------------------------------------------------------------------------------------

    /**
     * The request's text deltas. With {@code n > 1} the choices' deltas interleave, each tagged with its choice
     * ({@link TextDelta#choice()}); each choice has its own detokenizer and stop strings, and a stop string that
     * matches in one choice stops that choice only.
     */
    private Flux<TextDelta> deltas(GenerationRequest request) {
        Flux<TextDelta> deltas = request.n() == 1
                ? choiceDeltas(request, Flux.defer(() -> generator.generate(request)), 0)
                : Flux.defer(() -> generator.generateChoices(request))
                        .index()
                        .flatMap(choice -> choiceDeltas(request, choice.getT2(), choice.getT1().intValue()),
                                request.n());
        // The end user the client names (OpenAI's 'user') is in the MDC of every line about the generation.
        return deltas.contextWrite(context -> UserMdc.put(context, request.user()));
    }

    /** One choice's deltas; each choice's outcome is reported once, as each is metered as a generation of its own. */
    private Flux<TextDelta> choiceDeltas(GenerationRequest request, Flux<GeneratedToken> tokens, int choice) {
        Flux<TextDelta> decoded = TextDeltas.decode(tokens, codec::newDetokenizer, request.stop(),
                        request.sampling().stopTokenIds(), request.sampling().wantsLogprobs());
        return OutcomeReporting.observe(request, decoded, outcomes)
                .map(delta -> choice == 0 ? delta : delta.withChoice(choice))
                .doOnNext(delta -> {
                    if (delta.isLast()) {
                        log.debug("requestId={} finished reason={} promptTokens={} completionTokens={}{}",
                                request.requestId(), delta.finishReason(), request.promptTokens().length,
                                delta.completionTokens(), request.n() == 1 ? "" : " choice=" + choice);
                    }
                });
    }

    private Mono<ServerResponse> stream(GenerationRequest request, ServerRequest http, RequestTimings timings) {
        long created = clock.instant().getEpochSecond();
        CancelCause cause = new CancelCause();
        StreamGuard.Watch watch = streamGuard.watch(request.requestId(), cause,
                () -> closeConnection(request.requestId(), http));
        AtomicBoolean cancelled = new AtomicBoolean();
        Admission admission = new Admission();
        AtomicBoolean headersSent = new AtomicBoolean();
        CachedPromptTokens cachedTokens = new CachedPromptTokens();
        TerminalFrames frames = new TerminalFrames();
        Flux<byte[]> events = Flux.defer(() -> {
            ResponseShapes shapes = new ResponseShapes(request, created, codec, cachedTokens);
            return deltas(request)
                    .map(shapes::events)
                    .doOnNext(event -> timings.mark("gateway.sse.first"))
                    // Asked for with X-Ripcord-Timing: the marks, as an SSE comment every client skips.
                    .concatWith(Mono.defer(() -> timings.enabled()
                            ? Mono.just(timings.sseComment().getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                            : Mono.empty()))
                    .concatWith(Mono.fromSupplier(shapes::tail))
                    .concatWith(secondTerminalFrame(request.requestId(), shapes::tail))
                    .onErrorResume(failure -> {
                        if (cancelled.get()) {
                            // The client went away and the serving core reports the cancel it caused: expected, and
                            // there is nobody left to tell.
                            log.debug("requestId={} ended after the client's stream was cancelled ({})", request.requestId(),
                                    failure.toString());
                            return Mono.empty();
                        }
                        if (!shapes.started() && !headersSent.get()) {
                            return Mono.error(failure); // nothing sent yet: the error handler sets the status
                        }
                        ApiException error = OpenAiErrorHandler.toApiException(failure, null, request.requestId());
                        log.warn("requestId={} stream failed after it started; ending it with an error event",
                                request.requestId(), failure);
                        return Mono.just(shapes.errorEvents(error));
                    });
        }).doOnCancel(() -> {
            cancelled.set(true); // before the cancel travels up: what comes back up is not a failure to report
            log.debug("requestId={} stream cancelled ({})", request.requestId(), cause.reason());
        })
                .doFinally(signal -> admission.ended())
                // The request ID is in the context already (RequestIdFilter); the cancel cause is this stream's own.
                .contextWrite(Context.of(CancelCause.CONTEXT_KEY, cause, RequestTimings.CONTEXT_KEY, timings,
                        Admission.CONTEXT_KEY, admission, CachedPromptTokens.CONTEXT_KEY, cachedTokens,
                        TerminalFrames.CONTEXT_KEY, frames));
        AtomicReference<Subscription> generation = new AtomicReference<>();
        // Admitted by its workers, the stream's status and headers go out at once, ahead of the first token: an
        // empty first body element makes the server write and flush them (Admission).
        Flux<byte[]> headersNow = admission.whenAdmitted().map(admitted -> {
            headersSent.set(true);
            return NO_BYTES;
        }).flux();
        // From then on a comment every sse-heartbeat, until the events end: through the stall watch like any event.
        Sinks.Empty<Void> eventsEnded = Sinks.empty();
        Flux<byte[]> heartbeats = admission.whenAdmitted()
                .flatMapMany(admitted -> Flux.interval(properties.sseHeartbeat(), properties.sseHeartbeat()))
                // a tick with no demand is dropped, not an overflow error: a client that does not read backs up
                .onBackpressureDrop()
                .map(tick -> HEARTBEAT)
                .takeUntilOther(eventsEnded.asMono());
        AtomicLong lastWrite = new AtomicLong(System.nanoTime());
        return ServerResponse.ok()
                .contentType(MediaType.TEXT_EVENT_STREAM)
                .header(HttpHeaders.CACHE_CONTROL, "no-cache")
                .body(oneSend(Flux.merge(headersNow, heartbeats, events.doOnSubscribe(generation::set)
                                .doFinally(signal -> eventsEnded.tryEmitEmpty())), watch,
                        request.requestId(), generation, lastWrite, frames,
                        whenClosed(http, request.requestId(), lastWrite,
                                () -> cause.reason() == dev.ripcord.protocol.CancelReason.CLIENT_STALLED)));
    }

    /**
     * Bench-only ({@link Sabotage#DOUBLE_TERMINAL}, docs/operations.md): the stream's terminal frame ({@code tail})
     * written a second time, after the first, for the first streamed request (not warm-up traffic) that reaches its
     * end; nothing otherwise. Subscribed only once the first terminal frame was emitted.
     */
    static Mono<byte[]> secondTerminalFrame(String requestId, Supplier<byte[]> tail) {
        return Mono.deferContextual(view -> {
            if (WarmUp.marked(view) || !Sabotage.DOUBLE_TERMINAL.fire()) {
                return Mono.empty();
            }
            log.warn("requestId={} sabotaged: double-terminal (a bench-only switch) writes the terminal frame twice",
                    requestId);
            return Mono.fromSupplier(tail);
        });
    }

    /**
     * Completes when the client's connection closes, however it closes; logs and counts the departure, telling a
     * connection closed after {@code idle-close-threshold} without a byte from the gateway ({@code idle_close}) from
     * one closed by a client that left ({@code closed}). Never completes without a network connection (an in-memory
     * exchange). Subscribed only while the response is being produced: a close after the answer is no departure.
     *
     * @param lastWrite when the gateway last sent bytes on it ({@link System#nanoTime()})
     * @param stalled   whether the gateway closed it itself, for a client that stopped reading (counted as that)
     */
    private Mono<Void> whenClosed(ServerRequest http, String requestId, AtomicLong lastWrite,
                                  java.util.function.BooleanSupplier stalled) {
        Object nativeResponse;
        try {
            nativeResponse = ServerHttpResponseDecorator.getNativeResponse(http.exchange().getResponse());
        } catch (RuntimeException noNetwork) {
            return Mono.never();
        }
        if (!(nativeResponse instanceof Connection connection)) {
            return Mono.never();
        }
        return connection.onDispose().doOnSuccess(closed -> {
            if (stalled.getAsBoolean()) {
                return;
            }
            long idleNanos = System.nanoTime() - lastWrite.get();
            boolean idle = idleNanos >= properties.idleCloseThreshold().toNanos();
            streamGuard.stats().departed(idle);
            log.info("requestId={} the client's connection closed ({}) {} ms after the gateway last sent on it; "
                    + "cancelling the request", requestId, idle ? "idle_close: most likely a proxy's idle timeout"
                    : "closed: the client left", TimeUnit.NANOSECONDS.toMillis(idleNanos));
        });
    }

    private static final byte[] NO_BYTES = new byte[0];

    /**
     * Closes the client's connection at once, pending writes and all: what ends a stream whose client stopped
     * reading, since a writer waiting on a full socket would never finish. Without a network connection (an
     * in-memory exchange) there is nothing to close; ending the guarded stream is then all there is.
     */
    private static void closeConnection(String requestId, ServerRequest http) {
        Object nativeResponse;
        try {
            nativeResponse = ServerHttpResponseDecorator.getNativeResponse(http.exchange().getResponse());
        } catch (RuntimeException noNetwork) {
            return;
        }
        if (nativeResponse instanceof Connection connection) {
            // What the socket looked like when the writer stopped taking events: a client that stopped reading leaves
            // it unwritable with bytes queued; a writable, active channel means the writer itself was stuck.
            Channel channel = connection.channel();
            log.info("requestId={} closing the stalled stream's connection: active={} writable={} "
                            + "bytesBeforeWritable={} bytesBeforeUnwritable={}", requestId,
                    channel.isActive(), channel.isWritable(), channel.bytesBeforeWritable(),
                    channel.bytesBeforeUnwritable());
            connection.dispose();
        }
    }

    private Mono<ServerResponse> complete(GenerationRequest request, ServerRequest http) {
        long created = clock.instant().getEpochSecond();
        AtomicBoolean clientGone = new AtomicBoolean();
        CachedPromptTokens cachedTokens = new CachedPromptTokens();
        TerminalFrames frames = new TerminalFrames();
        return deltas(request)
                // Nothing is written until the end: the connection closing is the only sign the client left. Its
                // completion ends the deltas (cancelling the generation); an error from it would not cancel them.
                .takeUntilOther(whenClosed(http, request.requestId(), new AtomicLong(System.nanoTime()), () -> false)
                        .doOnSuccess(closed -> clientGone.set(true)))
                .concatWith(Mono.defer(() -> clientGone.get() ? Mono.error(ClientGone.INSTANCE) : Mono.empty()))
                .collectList()
                .flatMap(deltas -> {
                    List<ResponseShapes.Ending> endings = new ArrayList<>(request.n());
                    for (int choice = 0; choice < request.n(); choice++) {
                        StringBuilder text = new StringBuilder();
                        List<GeneratedToken> tokens = new ArrayList<>();
                        TextDelta last = null;
                        for (TextDelta delta : deltas) {
                            if (delta.choice() == choice) {
                                text.append(delta.text());
                                tokens.addAll(delta.tokens());
                                last = delta;
                            }
                        }
                        endings.add(new ResponseShapes.Ending(text.toString(), last.finishReason(),
                                last.completionTokens(), tokens));
                    }
                    ObjectNode body = new ResponseShapes(request, created, codec, cachedTokens).body(endings);
                    frames.written(TerminalFrames.BODY); // the one answer: the audit's evidence of it
                    return json(HttpStatus.OK, body);
                })
                .onErrorResume(ClientGone.class, gone -> Mono.empty()) // nobody left to answer
                .doOnCancel(() -> log.debug("requestId={} cancelled by the client", request.requestId()))
                // the serving core reads why it was cancelled, and whether a stop string had completed the answer
                .contextWrite(Context.of(CancelCause.CONTEXT_KEY, new CancelCause(),
                        CachedPromptTokens.CONTEXT_KEY, cachedTokens, TerminalFrames.CONTEXT_KEY, frames));
    }

    // --- models -------------------------------------------------------------------------------------------------

    Mono<ServerResponse> models(ServerRequest http) {
        return Mono.fromCallable(() -> {
            checkAccept(http);
            ObjectNode body = OpenAiJson.MAPPER.createObjectNode();
            body.put("object", "list");
            ArrayNode data = body.putArray("data");
            data.add(model());
            return body;
        }).flatMap(body -> json(HttpStatus.OK, body));
    }

    Mono<ServerResponse> model(ServerRequest http) {
        return Mono.fromCallable(() -> {
            checkAccept(http);
            String id = http.pathVariable("model");
            if (!id.equals(codec.modelName())) {
                throw ApiException.of(ErrorCode.MODEL_NOT_FOUND, "model", "The model '%s' does not exist.", id);
            }
            return (JsonNode) model();
        }).flatMap(body -> json(HttpStatus.OK, body));
    }

    /** One entry of {@code GET /v1/models}; {@code max_model_len} is vLLM's extension, handy for clients. */
    private ObjectNode model() {
        ObjectNode model = OpenAiJson.MAPPER.createObjectNode();
        model.put("id", codec.modelName());
        model.put("object", "model");
        model.put("created", startedAt);
        model.put("owned_by", properties.ownedBy());
        model.put("max_model_len", codec.contextLength());
        return model;
    }

    // --- writing ------------------------------------------------------------------------------------------------

    private static Mono<ServerResponse> json(HttpStatus status, JsonNode body) {
        byte[] bytes = OpenAiJson.bytes(body);
        return ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON)
                .body((message, context) -> message.writeWith(Mono.fromSupplier(() -> message.bufferFactory().wrap(bytes))));
    }

    /**
     * Writes the SSE events as one stream: one send per response, which flushes whenever it has written all it
     * holds, so a token reaches the client when it is generated and a burst goes out in one flush (Spring's
     * {@code writeAndFlushWith} would chain one flushed send per event). The events pass through the stream's
     * bounded buffer and stall watch ({@link StreamGuard}). Buffers wrap the events' byte arrays: nothing pooled is
     * held if the client cancels in between.
     */
    private static BodyInserter<Flux<byte[]>, ReactiveHttpOutputMessage> oneSend(Flux<byte[]> events,
            StreamGuard.Watch watch, String requestId, AtomicReference<Subscription> generation, AtomicLong lastWrite,
            TerminalFrames frames, Mono<Void> closed) {
        return (message, context) -> watch.write(message.writeWith(
                watch.guard(events).map(event -> {
                    lastWrite.set(System.nanoTime());
                    if (OpenAiJson.endsWithDone(event)) {
                        // Here, where the frame goes to the response, once per [DONE] written: the audit's evidence.
                        frames.written(TerminalFrames.DONE);
                    }
                    return message.bufferFactory().wrap(event);
                })))
                // The connection closed (the client left, or the kernel gave up on it): stop at once, whether or not
                // anything is being written (a silent generation would otherwise never learn it).
                .takeUntilOther(closed)
                // The write ended without the stream ending: the client is gone. Usually the writer has cancelled the
                // generation already; but a write that fails (the connection closed just as the first event went
                // out: AbortedException) ends with an error that does not always travel back up as a cancel, and the
                // generation would run on for nobody. Cancelling again is a no-op; done before the signal goes on,
                // so whoever sees the write end sees the generation stopped.
                .doOnError(failure -> cancelGeneration(requestId, generation, failure.toString()))
                .doOnCancel(() -> cancelGeneration(requestId, generation, "cancelled"));
    }

    private static void cancelGeneration(String requestId, AtomicReference<Subscription> generation, String why) {
        Subscription upstream = generation.get();
        if (upstream != null) {
            log.debug("requestId={} response write ended ({}); cancelling the generation", requestId, why);
            upstream.cancel();
        }
    }

    /** The client's connection closed before a non-streamed answer was ready. Stackless: expected, never logged. */
    private static final class ClientGone extends RuntimeException {
        static final ClientGone INSTANCE = new ClientGone();

        private ClientGone() {
            super("the client's connection closed", null, false, false);
        }
    }
}
