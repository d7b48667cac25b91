package dev.ripcord.gateway.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.lifecycle.RequestPhase;
import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.WorkerInstance;
import dev.ripcord.gateway.routing.WorkerPool;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.event.CircuitBreakerOnStateTransitionEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.ChannelOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.test.StepVerifier;
import dev.ripcord.gateway.generation.RequestTimings;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * The serving core against scripted fake workers: retries stop at admission, breakers take sick instances out of
 * routing, bulkheads spill to the next instance, only the admission is timed, and a cancel stops everything,
 * backoffs included. Every assertion is on counts and states (calls that reached each fake, breaker transitions,
 * bulkhead slots); the timers that matter run on a virtual clock.
 */
class ResilientLegsTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private final List<FakeWorker> workers = new ArrayList<>();
    private final List<WorkerPool> pools = new ArrayList<>();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final ConnectionProvider connections = ConnectionProvider.builder("resilient-legs-test")
            .maxConnections(64).pendingAcquireMaxCount(-1).build();
    private final WebClient client = WebClient.builder()
            .clientConnector(new ReactorClientHttpConnector(HttpClient.create(connections)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 2000)))
            .build();
    private final RequestContexts contexts = new RequestContexts(CancelPublisher.discarding(), cancelProperties(),
            meters, Clock.systemUTC(), Duration.ofHours(1));
    private final AtomicInteger ids = new AtomicInteger();

    @AfterEach
    void nothingIsLeftHeld() {
        // Every lease closed exactly once (bulkhead slots all back, nothing outstanding) and no request or leg left.
        await().atMost(WAIT).untilAsserted(() -> {
            assertThat(contexts.liveRequests()).as("live requests").isZero();
            assertThat(contexts.liveLinks()).as("linked legs").isZero();
            for (WorkerPool pool : pools) {
                for (WorkerInstance instance : pool.instances()) {
                    assertThat(instance.outstanding()).as("%s outstanding", instance).isZero();
                    assertThat(instance.bulkhead().getMetrics().getAvailableConcurrentCalls())
                            .as("%s bulkhead slots", instance)
                            .isEqualTo(instance.bulkhead().getBulkheadConfig().getMaxConcurrentCalls());
                }
            }
        });
        workers.forEach(FakeWorker::close);
        connections.disposeLater().block(WAIT);
    }

    // ------------------------------------------------------------------------------------------ timings

    @Test
    void aTimedRequestMarksEachLegsHopsAndTheWorkersEventsOnce() {
        FakeWorker decode = worker(FakeWorker.decodeGenerating(3));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));
        RequestTimings timings = RequestTimings.recording();

        StepVerifier.create(generator.generate(request())
                        .contextWrite(reactor.util.context.Context.of(RequestTimings.CONTEXT_KEY, timings)))
                .expectNextCount(3)
                .expectComplete()
                .verify(WAIT);

        // Causally ordered: the decode leg is sent and answers RESERVED before the prefill leg is sent.
        assertThat(List.copyOf(timings.marks().keySet()).subList(0, 4))
                .containsExactly("gateway.accepted", "decode.sent", "decode.reserved", "prefill.sent");
        assertThat(timings.marks()).containsOnlyKeys("gateway.accepted", "decode.sent", "decode.reserved",
                "prefill.sent", "prefill.queued", "prefill.started", "prefill.done", "decode.token.first",
                "decode.token.last");
    }

    @Test
    void anUntimedRequestMarksNothing() {
        FakeWorker decode = worker(FakeWorker.decodeGenerating(2));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request())).expectNextCount(2).expectComplete().verify(WAIT);

        assertThat(RequestTimings.NONE.marks()).isEmpty();
    }

    // ------------------------------------------------------------------------------------------ retries

    @Test
    void aDecodeRefusedBeforeAdmissionIsRetriedOnTheOtherInstanceExactlyOnce() {
        // Whichever instance is tried first answers 503 (queue full); the retry must land on the other one.
        AtomicInteger decodeCalls = new AtomicInteger();
        FakeWorker.Script firstRefused = (call, response) -> decodeCalls.incrementAndGet() == 1
                ? FakeWorker.status(503).answer(call, response)
                : FakeWorker.decodeGenerating(2).answer(call, response);
        FakeWorker a = worker(firstRefused);
        FakeWorker b = worker(firstRefused);
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(a.uri(), b.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectNextCount(2)
                .expectComplete()
                .verify(WAIT);

        assertThat(a.calls()).as("decode A").isEqualTo(1);
        assertThat(b.calls()).as("decode B").isEqualTo(1);
        assertThat(a.requestIds()).as("the retry reuses the request ID").isEqualTo(b.requestIds());
        assertThat(prefill.calls()).as("prefill called once, with the admitted attempt's descriptor").isEqualTo(1);
        assertThat(retryCalls("decode", "successful_with_retry")).isEqualTo(1);
    }

    @Test
    void aDecodeThatCannotBeReachedIsRetriedOnAnotherInstance() {
        FakeWorker b = worker(FakeWorker.decodeGenerating(3));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        URI refusing = FakeWorker.refusingUri();
        // Two attempts: whichever order routing picks, the refused one is followed by the healthy one.
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(refusing, b.uri()));

        for (int i = 0; i < 2; i++) {
            StepVerifier.create(generator.generate(request())).expectNextCount(3).expectComplete().verify(WAIT);
        }
        assertThat(b.calls()).isEqualTo(2);
        CircuitBreaker refusedBreaker = instance(decodePool(), refusing).circuitBreaker();
        assertThat(refusedBreaker.getMetrics().getNumberOfFailedCalls()).as("connection refused is a failure")
                .isPositive();
    }

    @Test
    void nothingIsRetriedOnceTheWorkerAdmittedTheLeg() {
        // A admits (RESERVED), then its stream breaks: the client gets the failure, B never hears of the request.
        Sinks.One<String> kill = Sinks.one();
        FakeWorker a = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()),
                kill.asMono().flatMap(why -> reactor.core.publisher.Mono.error(new IllegalStateException(why))))));
        FakeWorker b = worker(FakeWorker.decodeGenerating(2));
        FakeWorker prefill = worker(FakeWorker.hang());
        // A is asked first: both idle, and A is listed first.
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(a.uri(), b.uri()));

        StepVerifier.create(generator.generate(request()))
                .then(() -> await().atMost(WAIT).until(() -> prefill.calls() == 1))
                .then(() -> kill.tryEmitValue("worker killed mid-stream"))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(GenerationFailedException.class))
                .verify(WAIT);

        assertThat(a.calls()).isEqualTo(1);
        assertThat(b.calls()).as("never retried after admission").isZero();
        await().atMost(WAIT).until(() -> prefill.closedByGateway() == 1); // the prefill leg was disposed
        CircuitBreaker.Metrics metrics = instance(decodePool(), a.uri()).circuitBreaker().getMetrics();
        assertThat(metrics.getNumberOfSuccessfulCalls()).as("admitted").isEqualTo(1);
        assertThat(metrics.getNumberOfFailedCalls()).as("then its stream broke").isEqualTo(1);
    }

    @Test
    void aCancelledRequestTellsEachAnsweredWorkerItsReasonBeforeClosingItsStream() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}"),
                Flux.never())));
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));
        GenerationRequest request = request();
        Disposable call = generator.generate(request).subscribe(t -> { }, e -> { });
        await().atMost(WAIT).until(() -> prefill.calls() == 1);
        await().atMost(WAIT).until(() -> contexts.isLive(request.requestId()));

        contexts.cancel(request.requestId(), CancelReason.CLIENT_STALLED);

        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1 && prefill.closedByGateway() == 1);
        assertThat(decode.cancels()).extracting(ResilientLegsTest::asSent)
                .containsExactly(request.requestId() + " CLIENT_STALLED before close");
        assertThat(prefill.cancels()).extracting(ResilientLegsTest::asSent)
                .containsExactly(request.requestId() + " CLIENT_STALLED before close");
        call.dispose();
    }

    @Test
    void aWorkerErrorEventAfterAdmissionIsReportedNotRetried() {
        FakeWorker a = worker(FakeWorker.stream(Flux.just(FakeWorker.reserved(),
                "{\"type\":\"FAILED\",\"code\":\"transfer_failed\",\"message\":\"transfer failed\"}")));
        FakeWorker b = worker(FakeWorker.decodeGenerating(2));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(a.uri(), b.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(GenerationFailedException.class))
                .verify(WAIT);
        assertThat(a.calls() + b.calls()).as("one decode call in all").isEqualTo(1);
    }

    @Test
    void aQueuedPrefillPastItsMaximumWaitIsUnavailableWithTheWorkersRetryAfterNotAWorkerFault() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.just("{\"type\":\"QUEUED\",\"position\":3}",
                "{\"type\":\"FAILED\",\"code\":\"busy\",\"message\":\"waited longer than the maximum wait\","
                        + "\"retryAfterSeconds\":7}")));
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(WorkerUnavailableException.class)
                            .hasMessageContaining("could not start this request in time");
                    assertThat(((WorkerUnavailableException) e).retryAfter()).isEqualTo(Duration.ofSeconds(7));
                })
                .verify(WAIT);
        assertThat(prefill.calls()).as("admitted, so never retried").isEqualTo(1);
    }

    @Test
    void aWorkerThatShutsDownUnderARequestIsUnavailableNotTheClientsCancel() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.just(FakeWorker.reserved(),
                "{\"type\":\"CANCELLED\",\"reason\":\"SHUTDOWN\",\"source\":\"SHUTDOWN\"}")));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(WorkerUnavailableException.class)
                        .hasMessageContaining("(shutdown)"))
                .verify(WAIT);
        assertThat(decode.calls()).as("admitted, so never retried").isEqualTo(1);
    }

    @Test
    void aPrefillWorkerThatAnsweredIsNeverRetriedBecauseTheTransferIsSingleUse() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker p1 = worker(FakeWorker.status(503));
        FakeWorker p2 = worker(FakeWorker.status(503));
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(p1.uri(), p2.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(WorkerUnavailableException.class);
                    WorkerUnavailableException api = (WorkerUnavailableException) e;
                    assertThat(api.retryAfter()).as("the worker's Retry-After").isEqualTo(Duration.ofSeconds(2));
                })
                .verify(WAIT);
        assertThat(p1.calls() + p2.calls()).as("one prefill call in all").isEqualTo(1);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1); // the decode reservation was released
        assertThat(retryCalls("prefill", "failed_without_retry")).isEqualTo(1);
    }

    // ------------------------------------------------------------------------------------------ membership, drain

    /** What a draining worker's HTTP edge answers to a new job: 503 with the code {@code draining}. */
    private static FakeWorker.Script draining() {
        return (call, response) -> response.status(503)
                .header("Retry-After", "1")
                .header("Content-Type", "application/json")
                .sendString(Mono.just("{\"type\":\"FAILED\",\"code\":\"draining\",\"message\":\"draining\"}"));
    }

    @Test
    void aWorkerAddedToARunningPoolIsUsedAndADrainingOneGetsNoNewLegsWhileItsLegInFlightFinishes() {
        Sinks.One<Void> release = Sinks.one();
        FakeWorker a = worker(FakeWorker.firstThen(1,
                FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()),
                        release.asMono().thenMany(Flux.range(0, 3).map(i -> FakeWorker.token(i, i == 2))))),
                draining()));
        FakeWorker b = worker(FakeWorker.decodeGenerating(2));
        FakeWorker p1 = worker(FakeWorker.prefillDone());
        FakeWorker p2 = worker(draining());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(p1.uri()), List.of(a.uri()));

        // One request in flight on decode A; A then starts draining (its later calls answer 503 draining).
        java.util.concurrent.CompletableFuture<List<dev.ripcord.gateway.generation.GeneratedToken>> inFlight =
                generator.generate(request()).collectList().toFuture();
        await().atMost(WAIT).until(() -> a.calls() == 1 && p1.calls() == 1);

        // Discovery adds decode B and a prefill worker that is already draining.
        decodePool().update(List.of(a.uri(), b.uri()));
        prefillPool().update(List.of(p1.uri(), p2.uri()));

        for (int i = 0; i < 4; i++) { // A holds a leg, so B (least loaded) takes these
            StepVerifier.create(generator.generate(request())).expectNextCount(2).expectComplete().verify(WAIT);
        }
        assertThat(b.calls()).as("the worker added to the running pool").isEqualTo(4);
        assertThat(p2.calls()).as("the draining prefill worker said so once, and was skipped from then on")
                .isEqualTo(1);

        release.tryEmitEmpty();
        assertThat(inFlight.join()).as("the leg in flight on the draining worker finished").hasSize(3);

        for (int i = 0; i < 6; i++) { // A is idle now: the first leg sent there learns it drains, and is retried
            StepVerifier.create(generator.generate(request())).expectNextCount(2).expectComplete().verify(WAIT);
        }
        assertThat(a.calls()).as("the in-flight leg, then one refusal; never again").isEqualTo(2);
        assertThat(instance(decodePool(), a.uri()).draining()).isTrue();
        assertThat(p2.calls()).isEqualTo(1);
        assertThat(b.calls()).isEqualTo(10);
    }

    @Test
    void aPrefillWorkerThatCannotBeReachedIsRetriedOnAnother() {
        FakeWorker decode = worker(FakeWorker.decodeGenerating(2));
        FakeWorker p2 = worker(FakeWorker.prefillDone());
        URI refusing = FakeWorker.refusingUri();
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(refusing, p2.uri()), List.of(decode.uri()));

        for (int i = 0; i < 2; i++) {
            StepVerifier.create(generator.generate(request())).expectNextCount(2).expectComplete().verify(WAIT);
        }
        assertThat(p2.calls()).isEqualTo(2);
        assertThat(decode.calls()).as("decode admitted once per request, never re-reserved").isEqualTo(2);
    }

    @Test
    void aDecodeAnswering4xxIsNeitherRetriedNorABreakerFailure() {
        FakeWorker a = worker(FakeWorker.status(400));
        FakeWorker b = worker(FakeWorker.status(400));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(a.uri(), b.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(GenerationFailedException.class))
                .verify(WAIT);
        assertThat(a.calls() + b.calls()).isEqualTo(1);
        for (WorkerInstance instance : decodePool().instances()) {
            assertThat(instance.circuitBreaker().getMetrics().getNumberOfFailedCalls()).isZero();
        }
    }

    // ------------------------------------------------------------------------------------------ breaker

    @Test
    void anOpenBreakerTakesItsInstanceOutOfRoutingUntilAHalfOpenProbeClosesIt() {
        MutableClock clock = new MutableClock();
        ResilienceProperties properties = new ResilienceProperties(Duration.ofSeconds(10), Duration.ofSeconds(3),
                new ResilienceProperties.Retry(1, Duration.ofMillis(1), Duration.ofMillis(1)),
                new ResilienceProperties.CircuitBreaker(50, 4, 4, Duration.ofSeconds(30), 1),
                new ResilienceProperties.Bulkhead(16));
        FakeWorker decode = worker(FakeWorker.status(500));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(new WorkerResilience(properties, clock), Schedulers.parallel(),
                List.of(prefill.uri()), List.of(decode.uri()));
        CircuitBreaker breaker = decodePool().instances().getFirst().circuitBreaker();
        List<CircuitBreaker.StateTransition> transitions = new CopyOnWriteArrayList<>();
        breaker.getEventPublisher().onStateTransition(e -> transitions.add(e.getStateTransition()));

        for (int i = 0; i < 4; i++) {
            StepVerifier.create(generator.generate(request()))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(GenerationFailedException.class))
                    .verify(WAIT);
        }
        assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.OPEN);
        assertThat(stateGauge(decodePool().instances().getFirst(), "open")).isEqualTo(1.0);

        for (int i = 0; i < 5; i++) {
            StepVerifier.create(generator.generate(request()))
                    .expectErrorSatisfies(e -> {
                        assertThat(e).isInstanceOf(WorkerUnavailableException.class);
                        WorkerUnavailableException api = (WorkerUnavailableException) e;
                        assertThat(api.retryAfter()).isEqualTo(Duration.ofSeconds(3));
                    })
                    .verify(WAIT);
        }
        assertThat(decode.calls()).as("no traffic while open").isEqualTo(4);

        decode.script(FakeWorker.decodeGenerating(1));
        clock.advance(Duration.ofSeconds(31));
        StepVerifier.create(generator.generate(request())).expectNextCount(1).expectComplete().verify(WAIT);

        assertThat(decode.calls()).as("one half-open probe").isEqualTo(5);
        assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(transitions).containsExactly(CircuitBreaker.StateTransition.CLOSED_TO_OPEN,
                CircuitBreaker.StateTransition.OPEN_TO_HALF_OPEN, CircuitBreaker.StateTransition.HALF_OPEN_TO_CLOSED);
    }

    // ------------------------------------------------------------------------------------------ bulkhead

    @Test
    void aFullBulkheadSendsTheLegToTheNextInstanceAndAllFullIs503() {
        ResilienceProperties properties = new ResilienceProperties(Duration.ofSeconds(10), Duration.ofSeconds(4),
                new ResilienceProperties.Retry(2, Duration.ofMillis(1), Duration.ofMillis(5)),
                new ResilienceProperties.CircuitBreaker(50, 20, 10, Duration.ofSeconds(10), 2),
                new ResilienceProperties.Bulkhead(1));
        Sinks.Many<String> heldA = Sinks.many().unicast().onBackpressureBuffer();
        Sinks.Many<String> heldB = Sinks.many().unicast().onBackpressureBuffer();
        FakeWorker a = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), heldA.asFlux())));
        FakeWorker b = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), heldB.asFlux())));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        WorkerResilience resilience = new WorkerResilience(properties);
        DisaggregatedGenerator generator = generator(resilience, Schedulers.parallel(), List.of(prefill.uri()),
                List.of(a.uri(), b.uri()));

        List<GeneratedToken> first = new CopyOnWriteArrayList<>();
        List<GeneratedToken> second = new CopyOnWriteArrayList<>();
        // Each request waits until the previous one's prefill leg is over: prefill's bulkhead holds one leg, too.
        Disposable r1 = generator.generate(request()).subscribe(first::add);
        await().atMost(WAIT).until(() -> prefill.calls() == 1 && prefillPool().instances().getFirst().outstanding() == 0);
        Disposable r2 = generator.generate(request()).subscribe(second::add);
        await().atMost(WAIT).until(() -> prefill.calls() == 2 && prefillPool().instances().getFirst().outstanding() == 0);
        assertThat(a.calls()).as("each instance took one: the full one was skipped").isEqualTo(1);
        assertThat(b.calls()).isEqualTo(1);
        for (WorkerInstance instance : decodePool().instances()) {
            assertThat(instance.bulkhead().getMetrics().getAvailableConcurrentCalls()).isZero();
        }

        StepVerifier.create(generator.generate(request()))
                .expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(WorkerUnavailableException.class);
                    WorkerUnavailableException api = (WorkerUnavailableException) e;
                    assertThat(api.retryAfter()).isEqualTo(Duration.ofSeconds(4));
                })
                .verify(WAIT);
        assertThat(a.calls() + b.calls()).as("nothing sent while both are full").isEqualTo(2);
        for (WorkerInstance instance : decodePool().instances()) {
            assertThat(instance.circuitBreaker().getMetrics().getNumberOfFailedCalls())
                    .as("a full bulkhead is not a failure of the instance").isZero();
        }

        heldA.tryEmitNext(FakeWorker.token(0, true));
        heldA.tryEmitComplete();
        heldB.tryEmitNext(FakeWorker.token(0, true));
        heldB.tryEmitComplete();
        await().atMost(WAIT).until(() -> first.size() == 1 && second.size() == 1);
        r1.dispose();
        r2.dispose();
    }

    // ------------------------------------------------------------------------------------------ time limits

    @Test
    void aWorkerSilentPastTheAdmissionTimeoutIsAbandonedAndTheLegRetriedElsewhereWithTheSameId() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        FakeWorker a = worker(FakeWorker.hang());
        FakeWorker b = worker(FakeWorker.hang());
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        ResilienceProperties properties = ResilienceProperties.defaults();
        DisaggregatedGenerator generator = generator(new WorkerResilience(properties), timer, List.of(prefill.uri()),
                List.of(a.uri(), b.uri()));
        List<GeneratedToken> tokens = new CopyOnWriteArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Disposable call = generator.generate(request()).subscribe(tokens::add, failure::set);
        await().atMost(WAIT).until(() -> a.calls() + b.calls() == 1);
        // Whichever was asked first stays silent; the other one answers.
        FakeWorker silent = a.calls() == 1 ? a : b;
        FakeWorker healthy = silent == a ? b : a;
        healthy.script(FakeWorker.decodeGenerating(2));

        timer.advanceTimeBy(properties.admissionTimeout().minusMillis(1));
        assertThat(healthy.calls()).as("not yet timed out").isZero();
        timer.advanceTimeBy(Duration.ofMillis(1));          // the admission timeout fires: retry scheduled
        timer.advanceTimeBy(properties.retry().maxBackoff()); // the backoff passes: second attempt
        await().atMost(WAIT).until(() -> tokens.size() == 2);

        assertThat(failure.get()).isNull();
        assertThat(silent.calls()).isEqualTo(1);
        assertThat(healthy.calls()).isEqualTo(1);
        assertThat(healthy.requestIds()).as("same request ID, so a worker still holding it refuses a duplicate")
                .isEqualTo(silent.requestIds());
        await().atMost(WAIT).until(() -> silent.closedByGateway() == 1); // abandoned: its exchange was closed
        assertThat(instance(decodePool(), silent.uri()).circuitBreaker().getMetrics().getNumberOfFailedCalls())
                .as("no answer in time is a failure").isEqualTo(1);
        call.dispose();
    }

    @Test
    void aWorkerThatMayHoldAnAbandonedAttemptIsNeverRetriedAndWithNoOtherTheClientGets503() {
        // The bench saw retries onto the silent instance itself aborted by the tombstone its own abandoned attempt
        // left there, and answered as "request cancelled". With nowhere else to go, the honest answer is 503.
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        FakeWorker silent = worker(FakeWorker.hang());
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        ResilienceProperties properties = ResilienceProperties.defaults();
        DisaggregatedGenerator generator = generator(new WorkerResilience(properties), timer, List.of(prefill.uri()),
                List.of(silent.uri()));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Disposable call = generator.generate(request()).subscribe(t -> { }, failure::set);
        await().atMost(WAIT).until(() -> silent.calls() == 1);

        timer.advanceTimeBy(properties.admissionTimeout());
        for (int i = 0; i < properties.retry().maxAttempts(); i++) {
            timer.advanceTimeBy(properties.retry().maxBackoff());
        }
        await().atMost(WAIT).until(() -> failure.get() != null);

        assertThat(failure.get()).isInstanceOf(WorkerUnavailableException.class);
        assertThat(silent.calls()).as("never asked again").isEqualTo(1);
        assertThat(prefill.calls()).isZero();
        call.dispose();
    }

    @Test
    void aHealthyStreamSlowerThanTheAdmissionTimeoutIsNeverCut() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        // Both legs are admitted at once, then take far longer than the admission timeout: a long prefill queue,
        // slow tokens.
        Sinks.Many<String> tokens = Sinks.many().unicast().onBackpressureBuffer();
        Sinks.Many<String> progress = Sinks.many().unicast().onBackpressureBuffer();
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), tokens.asFlux())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":9}"),
                progress.asFlux())));
        ResilienceProperties properties = ResilienceProperties.defaults();
        DisaggregatedGenerator generator = generator(new WorkerResilience(properties), timer, List.of(prefill.uri()),
                List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .then(() -> await().atMost(WAIT).until(() -> admitted(decodePool()) == 1 && admitted(prefillPool()) == 1))
                .then(() -> {
                    timer.advanceTimeBy(properties.admissionTimeout().multipliedBy(100)); // long past the limit
                    progress.tryEmitNext("{\"type\":\"STARTED\"}");
                    timer.advanceTimeBy(properties.admissionTimeout().multipliedBy(100));
                    progress.tryEmitNext("{\"type\":\"DONE\",\"firstToken\":7}");
                    progress.tryEmitComplete();
                    tokens.tryEmitNext(FakeWorker.token(0, false));
                })
                .expectNextCount(1)
                .then(() -> {
                    // Slower than the admission timeout, within the gap a started decode stream may leave
                    timer.advanceTimeBy(DisaggregatedGenerator.TOKEN_GAP_LIMIT.minusSeconds(1));
                    tokens.tryEmitNext(FakeWorker.token(1, true));
                    tokens.tryEmitComplete();
                })
                .expectNextCount(1)
                .expectComplete()
                .verify(WAIT);
        assertThat(decode.calls()).isEqualTo(1);
        assertThat(prefill.calls()).isEqualTo(1);
        assertThat(decodePool().instances().getFirst().circuitBreaker().getMetrics().getNumberOfFailedCalls()).isZero();
        assertThat(prefillPool().instances().getFirst().circuitBreaker().getMetrics().getNumberOfFailedCalls()).isZero();
    }

    // ------------------------------------------------------------------------------------------ leg ends

    @Test
    void legsThatStayOpenAfterTheAnswerIsDecidedAreClosedAfterTheGraceAndTheClientGetsItsAnswer() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        // Decode sends its final token but never ends its stream; prefill sends DONE but never ends its stream.
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved(),
                FakeWorker.token(0, false), FakeWorker.token(1, true)), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}",
                "{\"type\":\"STARTED\"}", "{\"type\":\"DONE\",\"firstToken\":7}"), Flux.never())));
        DisaggregatedGenerator generator = generator(new WorkerResilience(ResilienceProperties.defaults()), timer,
                List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectNextCount(2)
                // Both admitted before virtual time moves (else the admission timeout would fire first).
                .then(() -> await().atMost(WAIT).until(() -> admitted(decodePool()) == 1
                        && admitted(prefillPool()) == 1))
                .then(() -> timer.advanceTimeBy(DisaggregatedGenerator.LEG_END_GRACE)) // decode's stream is closed
                .then(() -> timer.advanceTimeBy(DisaggregatedGenerator.LEG_END_GRACE)) // then prefill's
                .expectComplete()
                .verify(WAIT);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1 && prefill.closedByGateway() == 1);
    }

    @Test
    void aDecodeStreamThatStopsSendingTokensEndsTheRequestWithAnErrorAndItsLegsAreClosed() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        // Decode sends its first token, then nothing, and never ends its stream.
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved(),
                FakeWorker.token(0, false)), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(new WorkerResilience(ResilienceProperties.defaults()), timer,
                List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request()))
                .expectNextCount(1)
                .then(() -> await().atMost(WAIT).until(() -> admitted(decodePool()) == 1))
                .then(() -> timer.advanceTimeBy(DisaggregatedGenerator.TOKEN_GAP_LIMIT.minusSeconds(1)))
                .then(() -> assertThat(decode.closedByGateway()).as("open just before the limit").isZero())
                .then(() -> timer.advanceTimeBy(Duration.ofSeconds(1)))
                .expectError(GenerationFailedException.class)
                .verify(WAIT);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1);
    }

    @Test
    void aDecodeStreamThatSendsNoFirstTokenAfterPrefillFinishedEndsTheRequestWithAnErrorAndItsLegsAreClosed() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        // Decode reserves, prefill finishes (the KV is sent), and decode then sends nothing and never ends its stream.
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(new WorkerResilience(ResilienceProperties.defaults()), timer,
                List.of(prefill.uri()), List.of(decode.uri()));

        GenerationRequest request = request();
        StepVerifier.create(generator.generate(request))
                // Prefill's DONE is in before virtual time moves: the limit runs from there.
                .then(() -> await().atMost(WAIT).until(() -> contexts.find(request.requestId(), ApiKeys.ANONYMOUS)
                        .map(summary -> summary.phase() == RequestPhase.TRANSFER).orElse(false)))
                .then(() -> timer.advanceTimeBy(DisaggregatedGenerator.TOKEN_GAP_LIMIT.minusSeconds(1)))
                .then(() -> assertThat(decode.closedByGateway()).as("open just before the limit").isZero())
                .then(() -> timer.advanceTimeBy(Duration.ofSeconds(1)))
                .expectError(GenerationFailedException.class)
                .verify(WAIT);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1);
    }

    @Test
    void aDeadlineThatFiresWhileTheLegsAreBeingSetUpAlwaysEndsTheGeneration() {
        FakeWorker decode = worker(FakeWorker.decodeGenerating(4));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(ResilienceProperties.defaults(), List.of(prefill.uri()),
                List.of(decode.uri()));

        List<String> unended = Flux.range(0, 400)
                .flatMap(i -> {
                    GenerationRequest request = request(1, Duration.ofNanos(
                            java.util.concurrent.ThreadLocalRandom.current().nextLong(0, 4_000_000)));
                    return generator.generate(request).then(Mono.just("")).onErrorReturn("")
                            .timeout(Duration.ofSeconds(10), Mono.just(request.requestId()));
                }, 8)
                .filter(id -> !id.isEmpty())
                .collectList()
                .block(Duration.ofMinutes(2));
        assertThat(unended).as("generations that never ended").isEmpty();
    }

    @Test
    void legsThatEndOnTimeAreNeverClosedByTheGateway() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        FakeWorker decode = worker(FakeWorker.decodeGenerating(3));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(new WorkerResilience(ResilienceProperties.defaults()), timer,
                List.of(prefill.uri()), List.of(decode.uri()));

        StepVerifier.create(generator.generate(request())).expectNextCount(3).expectComplete().verify(WAIT);
        timer.advanceTimeBy(DisaggregatedGenerator.LEG_END_GRACE.multipliedBy(3));
        assertThat(decode.closedByGateway()).isZero();
        assertThat(prefill.closedByGateway()).isZero();
    }

    // ------------------------------------------------------------------------------------------ cancellation

    @Test
    void aClientCancelDuringBackoffSendsNothingFurther() {
        VirtualTimeScheduler timer = VirtualTimeScheduler.create();
        FakeWorker decode = worker(FakeWorker.status(503));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        WorkerResilience resilience = new WorkerResilience(ResilienceProperties.defaults());
        DisaggregatedGenerator generator = generator(resilience, timer, List.of(prefill.uri()), List.of(decode.uri()));
        AtomicInteger retriesScheduled = new AtomicInteger();
        resilience.retries().retry("decode").getEventPublisher().onRetry(e -> retriesScheduled.incrementAndGet());

        Disposable call = generator.generate(request()).subscribe(t -> { }, e -> { });
        await().atMost(WAIT).until(() -> retriesScheduled.get() == 1); // refused, now in backoff
        call.dispose();
        timer.advanceTimeBy(Duration.ofHours(1));

        WorkerInstance instance = decodePool().instances().getFirst();
        assertThat(instance.routed()).as("no attempt after the cancel (routing is synchronous)").isEqualTo(1);
        assertThat(decode.calls()).isEqualTo(1);
        assertThat(retriesScheduled.get()).isEqualTo(1);
        assertThat(prefill.calls()).isZero();
    }

    @Test
    void aClientCancelIsNeverABreakerFailure() {
        FakeWorker connecting = worker(FakeWorker.hang());
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(connecting.uri()));

        // Cancelled while connecting (before admission) ...
        Disposable first = generator.generate(request()).subscribe(t -> { }, e -> { });
        await().atMost(WAIT).until(() -> connecting.calls() == 1);
        first.dispose();
        await().atMost(WAIT).until(() -> connecting.closedByGateway() == 1);

        // ... and after admission, mid-stream.
        connecting.script(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        Disposable second = generator.generate(request()).subscribe(t -> { }, e -> { });
        await().atMost(WAIT).until(() -> admitted(decodePool()) == 1);
        second.dispose();
        await().atMost(WAIT).until(() -> connecting.closedByGateway() == 2);

        CircuitBreaker.Metrics metrics = decodePool().instances().getFirst().circuitBreaker().getMetrics();
        assertThat(metrics.getNumberOfFailedCalls()).isZero();
        assertThat(metrics.getNumberOfSuccessfulCalls()).isEqualTo(1);
    }

    // ------------------------------------------------------------------------------------------ several choices

    @Test
    void aChoiceRefusedForCapacityFailsTheRequestAndItsSiblingsAreCancelledAsAnUpstreamError() {
        // Choices 0 and 1 are admitted and wait for KV; choice 2 is refused (503) on every attempt once they do.
        Sinks.Empty<Void> siblingsWaiting = Sinks.empty();
        FakeWorker.Script waitForKv = FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never()));
        FakeWorker decode = workerByRequestId((id, call, response) -> id.endsWith(".2")
                ? siblingsWaiting.asMono().then(Mono.from(FakeWorker.status(503).answer(call, response)))
                : waitForKv.answer(call, response));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}"),
                Flux.never())));
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));
        GenerationRequest request = request(3, null);
        String id = request.requestId();

        // As the OpenAI edge merges the choices: the first error ends the merge and cancels the rest.
        StepVerifier.create(generator.generateChoices(request).flatMap(choice -> choice, 3))
                .then(() -> await().atMost(WAIT).until(() -> prefill.calls() == 2))
                .then(siblingsWaiting::tryEmitEmpty)
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(WorkerUnavailableException.class)
                        .hasMessageContaining("decode workers are at capacity"))
                .verify(WAIT);

        assertThat(decode.requestIds().stream().filter(r -> asSent(r).equals(id + ".2")))
                .as("choice 2: every attempt refused").hasSize(3);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 2 && prefill.closedByGateway() == 2);
        // The waiting siblings' workers learn why their streams close: not a client that went away.
        assertThat(decode.cancels()).extracting(ResilientLegsTest::idAndReason)
                .containsExactlyInAnyOrder(id + " UPSTREAM_ERROR", id + ".1 UPSTREAM_ERROR");
        assertThat(prefill.cancels()).extracting(ResilientLegsTest::idAndReason)
                .containsExactlyInAnyOrder(id + " UPSTREAM_ERROR", id + ".1 UPSTREAM_ERROR");
        assertThat(contexts.find(id, ApiKeys.ANONYMOUS)).get()
                .satisfies(summary -> assertThat(summary.cancelReason()).isEqualTo(CancelReason.UPSTREAM_ERROR));
    }

    @Test
    void aChoiceRefusedAtAnyMomentFailsTheRequestAndNoSiblingIsLeftWaiting() {
        // The refusal lands anywhere from before the siblings' decode answers to after their prefill queued.
        FakeWorker.Script waitForKv = FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never()));
        FakeWorker decode = workerByRequestId((id, call, response) -> id.endsWith(".2")
                ? Mono.delay(Duration.ofMillis(ThreadLocalRandom.current().nextInt(20)))
                        .then(Mono.from(FakeWorker.status(503).answer(call, response)))
                : waitForKv.answer(call, response));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}"),
                Flux.never())));
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));

        for (int i = 0; i < 20; i++) {
            GenerationRequest request = request(3, null);
            StepVerifier.create(generator.generateChoices(request).flatMap(choice -> choice, 3))
                    .expectError(WorkerUnavailableException.class)
                    .verify(WAIT);
            await().atMost(WAIT).until(() -> contexts.liveLinks() == 0);
            assertThat(contexts.find(request.requestId(), ApiKeys.ANONYMOUS)).get()
                    .satisfies(summary -> assertThat(summary.cancelReason()).isEqualTo(CancelReason.UPSTREAM_ERROR));
        }
        // Whatever a worker had admitted when the refusal came was told why it ended.
        assertThat(decode.cancels()).allSatisfy(cancel -> assertThat(cancel).contains(" UPSTREAM_ERROR "));
        assertThat(prefill.cancels()).allSatisfy(cancel -> assertThat(cancel).contains(" UPSTREAM_ERROR "));
    }

    @Test
    void aFinishedChoiceWaitsForSiblingsThatNeverAnswerOnlyUntilTheRequestsDeadline() {
        // Choice 0 is served; decode reserves choice 1 and then says nothing, and never answers choice 2 at all
        // (the deadline comes well before the admission timeout).
        FakeWorker.Script waitForKv = FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never()));
        FakeWorker decode = workerByRequestId((id, call, response) -> id.endsWith(".1")
                ? waitForKv.answer(call, response)
                : id.endsWith(".2") ? FakeWorker.hang().answer(call, response)
                : FakeWorker.decodeGenerating(3).answer(call, response));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(fastRetries(), List.of(prefill.uri()), List.of(decode.uri()));
        GenerationRequest request = request(3, Duration.ofSeconds(1));
        String id = request.requestId();

        StepVerifier.create(generator.generateChoices(request)
                        .flatMap(choice -> choice.collectList().map(tokens -> tokens.size() + " tokens")
                                .onErrorResume(e -> Mono.just(e.getClass().getSimpleName())), 3)
                        .collectList())
                .assertNext(endings -> assertThat(endings).containsExactlyInAnyOrder("3 tokens",
                        "DeadlineExceededException", "DeadlineExceededException"))
                .expectComplete()
                .verify(WAIT);

        await().atMost(WAIT).until(() -> decode.closedByGateway() == 2);
        // Told why where it had answered; the unanswered exchange is simply closed.
        assertThat(decode.cancels()).extracting(ResilientLegsTest::idAndReason).containsExactly(id + ".1 DEADLINE");
        assertThat(contexts.find(id, ApiKeys.ANONYMOUS)).get()
                .satisfies(summary -> assertThat(summary.cancelReason()).isEqualTo(CancelReason.DEADLINE));
    }

    // ------------------------------------------------------------------------------------------ fixture

    private FakeWorker worker(FakeWorker.Script script) {
        FakeWorker worker = FakeWorker.start(script);
        workers.add(worker);
        return worker;
    }

    private FakeWorker workerByRequestId(FakeWorker.ByRequestId script) {
        FakeWorker worker = FakeWorker.startByRequestId(script);
        workers.add(worker);
        return worker;
    }

    private DisaggregatedGenerator generator(ResilienceProperties properties, List<URI> prefill, List<URI> decode) {
        return generator(new WorkerResilience(properties), Schedulers.parallel(), prefill, decode);
    }

    private DisaggregatedGenerator generator(WorkerResilience resilience, Scheduler timer, List<URI> prefill,
                                             List<URI> decode) {
        resilience.bindTo(meters);
        WorkerPool prefillPool = new WorkerPool("prefill", prefill, resilience);
        WorkerPool decodePool = new WorkerPool("decode", decode, resilience);
        pools.clear();
        pools.add(prefillPool);
        pools.add(decodePool);
        return new DisaggregatedGenerator(client, prefillPool, decodePool, contexts, resilience, timer);
    }

    private WorkerPool prefillPool() {
        return pools.get(0);
    }

    private WorkerPool decodePool() {
        return pools.get(1);
    }

    /**
     * "ID REASON" of a fake's in-band cancel (with two streams on one fake, "before close" says little), the ID as
     * the test sent it ({@link #asSent}).
     */
    private static String idAndReason(String cancel) {
        return asSent(cancel.substring(0, cancel.lastIndexOf(' ', cancel.lastIndexOf(' ') - 1)));
    }

    /**
     * What a worker was sent, with the request's ID as the test sent it: the gateway's internal ID ({@code ID:} and
     * 22 random characters, then {@code .i} for choice {@code i}) without its random part.
     */
    private static String asSent(String text) {
        return text.replaceAll(":[A-Za-z0-9]{22}", "");
    }

    private static WorkerInstance instance(WorkerPool pool, URI uri) {
        return pool.instances().stream().filter(i -> i.uri().equals(uri)).findFirst().orElseThrow();
    }

    private static int admitted(WorkerPool pool) {
        return pool.instances().stream().mapToInt(i -> i.circuitBreaker().getMetrics().getNumberOfSuccessfulCalls())
                .sum();
    }

    private double stateGauge(WorkerInstance instance, String state) {
        return meters.get("resilience4j.circuitbreaker.state").tag("name", instance.name()).tag("state", state)
                .gauge().value();
    }

    private double retryCalls(String role, String kind) {
        return meters.get("resilience4j.retry.calls").tag("name", role).tag("kind", kind).functionCounter().count();
    }

    /** Three attempts, a millisecond apart: retries without waiting. */
    private static ResilienceProperties fastRetries() {
        return new ResilienceProperties(Duration.ofSeconds(10), Duration.ofSeconds(1),
                new ResilienceProperties.Retry(3, Duration.ofMillis(1), Duration.ofMillis(5)),
                new ResilienceProperties.CircuitBreaker(50, 20, 10, Duration.ofSeconds(10), 2),
                new ResilienceProperties.Bulkhead(64));
    }

    private GenerationRequest request() {
        return new GenerationRequest("resilience-" + ids.incrementAndGet(), "ripcord-tiny", new int[] {1, 2, 3}, 4,
                0.0, 1.0, OptionalLong.of(1), List.of(), false, true, false, null, null,
                GenerationRequest.Kind.COMPLETION);
    }

    /** {@code n} choices of 4 tokens, with {@code timeout} as the request's deadline (null: none). */
    private GenerationRequest request(int n, Duration timeout) {
        return new GenerationRequest("resilience-" + ids.incrementAndGet(), "ripcord-tiny", new int[] {1, 2, 3}, 4,
                0.0, 1.0, OptionalLong.of(1), List.of(), false, true, false, null, timeout,
                GenerationRequest.Kind.COMPLETION, SamplingOptions.NONE, n, false);
    }

    private static CancelProperties cancelProperties() {
        return new CancelProperties(CancelPropagation.IN_BAND, false, "ripcord.cancellations",
                "ripcord.cancellations.dlt", 3, 1, Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10),
                Duration.ofMinutes(10), 100_000, false, Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200),
                "resilient-legs-test");
    }

    /** A clock the test moves by hand: how long an open breaker has waited. */
    private static final class MutableClock extends Clock {
        private volatile Instant now = Instant.parse("2026-11-01T00:00:00Z");

        void advance(Duration by) {
            now = now.plus(by);
        }

        @Override
        public ZoneId getZone() {
            return ZoneId.of("UTC");
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
