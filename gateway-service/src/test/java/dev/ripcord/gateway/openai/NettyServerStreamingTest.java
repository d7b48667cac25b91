package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.unfinished;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import reactor.util.retry.Retry;

import dev.ripcord.gateway.generation.GeneratedToken;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.test.StepVerifier;

/**
 * The same context behind a real Reactor Netty server on a random port: what the in-memory client cannot show,
 * that every token is flushed to the socket as it is generated and that a client closing its connection cancels
 * the generation.
 */
class NettyServerStreamingTest extends OpenAiEndpointTest {

    private DisposableServer server;
    private WebClient webClient;

    @BeforeEach
    void startServer() {
        server = HttpServer.create().host("127.0.0.1").port(0)
                .handle(new ReactorHttpHandlerAdapter(WebHttpHandlerBuilder.applicationContext(context).build()))
                .bindNow(Duration.ofSeconds(10));
        webClient = WebClient.create("http://127.0.0.1:" + server.port());
    }

    @AfterEach
    void stopServer() {
        server.disposeNow(Duration.ofSeconds(10));
    }

    @Test
    void eachTokenReachesTheClientBeforeTheNextIsGenerated() {
        Sinks.Many<GeneratedToken> tokens = Sinks.many().unicast().onBackpressureBuffer();
        generator.script(request -> tokens.asFlux());

        Flux<String> events = webClient.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}")
                .retrieve().bodyToFlux(String.class);

        StepVerifier.create(events)
                .then(() -> tokens.tryEmitNext(new GeneratedToken(0, 'a', null)))
                .assertNext(data -> assertThat(json(data).get("choices").get(0).get("text").stringValue()).isEqualTo("a"))
                .then(() -> {
                    tokens.tryEmitNext(new GeneratedToken(1, 'b', GeneratedToken.LENGTH));
                    tokens.tryEmitComplete();
                })
                .assertNext(data -> assertThat(json(data).get("choices").get(0).get("text").stringValue()).isEqualTo("b"))
                .assertNext(data -> assertThat(json(data).get("choices").get(0).get("finish_reason").stringValue())
                        .isEqualTo("length"))
                .expectNext("[DONE]")
                .expectComplete()
                .verify(Duration.ofSeconds(10));
    }

    /**
     * A request whose deadline fires on the timer's thread while its generation is still being set up on the event
     * loop (a deadline of a few milliseconds; the leg takes a moment to subscribe) is answered: every one of many
     * such requests gets its status, none is left without a response. The generation has the serving core's shape:
     * a request context whose deadline cancels it, the leg linked to it ({@code RequestContext.link}), then
     * {@code switchOnFirst} and the cancel's error.
     */
    @Test
    void aRequestWhoseDeadlineFiresWhileItsLegIsBeingSubscribedIsAlwaysAnswered() {
        RequestContexts contexts = new RequestContexts(CancelPublisher.discarding(), new CancelProperties(
                CancelPropagation.IN_BAND, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3, 1,
                Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000,
                false, Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "netty-server-streaming-test"),
                new SimpleMeterRegistry(), Clock.systemUTC(), Duration.ofHours(1));
        generator.script(request -> Flux.defer(() -> {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            RequestContext ctx = contexts.open(request.requestId(), Duration.ofNanos(random.nextLong(0, 3_000_000)));
            long subscribeNanos = random.nextLong(0, 3_000_000);
            Flux<GeneratedToken> leg = Flux.defer(() -> {
                LockSupport.parkNanos(subscribeNanos);
                return Flux.<GeneratedToken>never();
            }).retryWhen(Retry.from(signals -> signals.concatMap(signal -> Mono.<Long>error(signal.failure()))));
            return ctx.link(leg)
                    .switchOnFirst((first, events) -> first.hasValue() ? events
                            : events.flatMap(e -> Flux.<GeneratedToken>error(new IllegalStateException("unexpected"))))
                    .concatWith(Flux.defer(() -> ctx.cancelReason() == null ? Flux.<GeneratedToken>empty()
                            : Flux.error(new DeadlineExceededException(request.requestId()))))
                    .doFinally(signal -> contexts.close(ctx));
        }));
        int requests = 400;
        List<Integer> statuses = Flux.range(0, requests)
                .flatMap(i -> webClient.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                        .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}")
                        .exchangeToMono(response -> response.releaseBody().thenReturn(response.statusCode().value()))
                        .timeout(Duration.ofSeconds(10), Mono.just(-1)), 16)
                .collectList()
                .block(Duration.ofMinutes(2));
        assertThat(statuses).as("statuses (-1: no answer within 10 s)").hasSize(requests).doesNotContain(-1);
        assertThat(contexts.liveRequests()).as("contexts left open").isZero();
        assertThat(contexts.liveLinks()).as("links left").isZero();
    }

    @Test
    void closingTheConnectionCancelsTheGeneration() {
        generator.replayThenHang(unfinished("abc"));

        Flux<String> events = webClient.post().uri("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                        + "\"stream\":true}")
                .retrieve().bodyToFlux(String.class);

        StepVerifier.create(events)
                .assertNext(data -> assertThat(data).contains("\"role\":\"assistant\""))
                .thenCancel()
                .verify(Duration.ofSeconds(10));
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
    }

    /**
     * Regression: a serving core answers the cancel of a departed client with an error (the request was cancelled);
     * that error came back up through the stream and was logged as a WARN "stream failed after it started" once per
     * client that left mid-stream.
     */
    @Test
    void errorReportingTheClientsOwnCancelIsNotLoggedAsAFailure() {
        ch.qos.logback.classic.Logger handlerLog =
                (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(OpenAiHandler.class);
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> logged =
                new ch.qos.logback.core.read.ListAppender<>();
        logged.start();
        handlerLog.addAppender(logged);
        try {
            // Like the serving core: the first token, then silence; a cancel is answered with onError.
            generator.script(request -> Flux.from(subscriber -> subscriber.onSubscribe(new Subscription() {
                private boolean sent;

                @Override
                public void request(long n) {
                    if (!sent) {
                        sent = true;
                        subscriber.onNext(new GeneratedToken(0, 'a', null));
                    }
                }

                @Override
                public void cancel() {
                    subscriber.onError(ApiException.of(ErrorCode.REQUEST_CANCELLED, null, "request was cancelled"));
                }
            })));
            Flux<String> events = webClient.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                    .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}")
                    .retrieve().bodyToFlux(String.class);

            StepVerifier.create(events)
                    .assertNext(data -> assertThat(data).contains("\"text\":\"a\""))
                    .thenCancel()
                    .verify(Duration.ofSeconds(10));

            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
            assertThat(logged.list).noneMatch(event -> event.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.WARN));
        } finally {
            handlerLog.detachAppender(logged);
        }
    }

    /**
     * A client that sends its request and closes its socket before the first token: the server only learns it when
     * it writes the response head, as the first token arrives. That failed write must cancel the generation too.
     */
    @Test
    void clientGoneBeforeTheFirstTokenCancelsTheGenerationWhenTheHeadCannotBeWritten() throws Exception {
        generator.script(request -> Flux.concat(Mono.delay(Duration.ofMillis(500))
                .map(tick -> new GeneratedToken(0, 'a', null)), Flux.never()));
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", server.port())) {
            byte[] body = "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}"
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().write(body);
            socket.getOutputStream().flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> generator.subscriptions() == 1);
        } // closed before the first token

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
    }

    @Test
    void bodyArrivingInPooledBuffersIsReadWhole() {
        generator.replay(ScriptedTokenGenerator.tokensThenEos("ok"));
        String prompt = "z".repeat(200);

        String body = webClient.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"" + prompt + "\",\"max_tokens\":5,"
                        + "\"user\":\"" + "u".repeat(12_000) + "\"}")
                .retrieve().bodyToMono(String.class).block(Duration.ofSeconds(10));

        assertThat(json(body).get("choices").get(0).get("text").stringValue()).isEqualTo("ok");
        assertThat(generator.lastRequest().promptTokens()).hasSize(200);
    }
}
