package dev.ripcord.gateway.serving;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.generation.CancelCause;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What a cancel is addressed to, through the real generator and two fake workers: the workers know each request by
 * the internal ID its gateway minted (and its choices by that ID's choice suffix), and a key's cancel by its client ID
 * reaches that key's request only, in band and on Kafka.
 */
class InternalIdentityTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String KEY_A = "key-aaaaaaaaaaaa";
    private static final String KEY_B = "key-bbbbbbbbbbbb";

    private final List<CancelEvent> published = new CopyOnWriteArrayList<>();
    private final CancelPublisher recording = new CancelPublisher() {
        @Override
        public CompletableFuture<Void> publish(CancelEvent event) {
            published.add(event);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> publish(String requestId, CancelReason reason) {
            throw new UnsupportedOperationException("the gateway publishes whole events");
        }
    };
    private final RequestContexts contexts = new RequestContexts(recording, new CancelProperties(
            CancelPropagation.BOTH, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3, 1,
            Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000, false,
            Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "identity-test"), new SimpleMeterRegistry(),
            Clock.systemUTC(), Duration.ofHours(1));
    private final List<FakeWorker> workers = new ArrayList<>();
    private final List<Disposable> calls = new ArrayList<>();

    @AfterEach
    void stop() {
        calls.forEach(Disposable::dispose);
        await().atMost(WAIT).until(() -> contexts.liveRequests() == 0);
        workers.forEach(FakeWorker::close);
    }

    @Test
    void twoKeysUsingTheSameIdWithTwoChoicesCannotCancelEachOther() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}"),
                Flux.never())));
        DisaggregatedGenerator generator = generator(prefill.uri(), decode.uri());

        // Key A's "x" with n=2, key B's "x" with n=2 and key B's "x.1": the old choice ID of A's second choice.
        start(generator, request("x", 2), KEY_A);
        start(generator, request("x", 2), KEY_B);
        start(generator, request("x.1", 1), KEY_B);
        await().atMost(WAIT).until(() -> prefill.calls() == 5 && decode.calls() == 5);
        assertThat(contexts.liveRequests()).as("the same ID under two keys at once: no conflict").isEqualTo(3);
        String internalA = contexts.live("x", KEY_A).orElseThrow().internalId();
        Set<String> idsOfA = Set.of(internalA, RequestIds.choiceId(internalA, 1));
        assertThat(Set.copyOf(decode.requestIds())).as("every worker-facing ID is unique").hasSize(5)
                .allSatisfy(id -> assertThat(id).matches("x(\\.1)?:[A-Za-z0-9]{22}(\\.1)?"))
                .containsAll(idsOfA);

        assertThat(contexts.cancel("x", KEY_A, CancelReason.CLIENT_CANCEL)).isPresent();

        await().atMost(WAIT).until(() -> decode.closedByGateway() == 2 && prefill.closedByGateway() == 2);
        assertThat(published).extracting(CancelEvent::requestId).containsExactlyInAnyOrderElementsOf(idsOfA);
        assertThat(decode.cancels()).extracting(InternalIdentityTest::idOf).containsExactlyInAnyOrderElementsOf(idsOfA);
        assertThat(prefill.cancels()).extracting(InternalIdentityTest::idOf)
                .containsExactlyInAnyOrderElementsOf(idsOfA);
        await().atMost(WAIT).until(() -> contexts.liveRequests() == 2);
        assertThat(contexts.live("x", KEY_B)).as("B's x").isPresent();
        assertThat(contexts.live("x.1", KEY_B)).as("B's x.1").isPresent();
        assertThat(contexts.cancel("x", KEY_A, CancelReason.CLIENT_CANCEL)).as("A has no x any more").isEmpty();
        assertThat(decode.closedByGateway()).as("none of B's legs was touched").isEqualTo(2);
    }

    @Test
    void anIdReusedRightAfterACancelGoesToTheWorkersUnderANewInternalId() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved()), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.stream(Flux.concat(Flux.just("{\"type\":\"QUEUED\",\"position\":0}"),
                Flux.never())));
        DisaggregatedGenerator generator = generator(prefill.uri(), decode.uri());

        start(generator, request("reuse-1", 1), KEY_A);
        await().atMost(WAIT).until(() -> decode.calls() == 1 && prefill.calls() == 1);
        assertThat(contexts.cancel("reuse-1", KEY_A, CancelReason.CLIENT_CANCEL)).isPresent();
        await().atMost(WAIT).until(() -> contexts.liveRequests() == 0);
        start(generator, request("reuse-1", 1), KEY_A);
        await().atMost(WAIT).until(() -> decode.calls() == 2 && prefill.calls() == 2);

        String second = contexts.live("reuse-1", KEY_A).orElseThrow().internalId();
        assertThat(decode.requestIds()).hasSize(2).doesNotHaveDuplicates().last().isEqualTo(second);
        assertThat(published).extracting(CancelEvent::requestId).as("the first request's cancel names it only")
                .containsExactly(decode.requestIds().getFirst()).doesNotContain(second, "reuse-1");
    }

    @Test
    void aStopStringFinishCompletesTheRequestAndIsNeverPublishedAsAClientDisconnect() {
        // Regression: the edge ending a generation because a stop string matched was published (and told to the
        // workers) as CLIENT_DISCONNECT, and the request was recorded as cancelled.
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved(),
                FakeWorker.token(0, false)), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.prefillDone());
        DisaggregatedGenerator generator = generator(prefill.uri(), decode.uri());
        CancelCause cause = new CancelCause();

        reactor.test.StepVerifier.create(generator.generate(request("stopped", 1))
                        .contextWrite(Context.of(ApiKeys.ATTRIBUTE, KEY_A, CancelCause.CONTEXT_KEY, cause)))
                .expectNextCount(1)
                .then(() -> cause.recordFinish("stop")) // as the edge does when a stop string matches
                .thenCancel()
                .verify(WAIT);

        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1);
        assertThat(published).extracting(CancelEvent::reason).containsExactly(CancelReason.ANSWER_COMPLETE);
        assertThat(decode.cancels()).singleElement().satisfies(c -> assertThat(c).contains(" ANSWER_COMPLETE "));
        assertThat(contexts.find("stopped", KEY_A)).get().satisfies(summary -> {
            assertThat(summary.state()).isEqualTo(dev.ripcord.gateway.lifecycle.RequestContext.State.COMPLETED);
            assertThat(summary.finishReason()).isEqualTo("stop");
            assertThat(summary.cancelReason()).isNull();
        });
    }

    private void start(DisaggregatedGenerator generator, GenerationRequest request, String key) {
        calls.add(generator.generateChoices(request).flatMap(choice -> choice, request.n())
                .contextWrite(Context.of(ApiKeys.ATTRIBUTE, key))
                .subscribe(t -> { }, e -> { }));
    }

    private FakeWorker worker(FakeWorker.Script script) {
        FakeWorker worker = FakeWorker.start(script);
        workers.add(worker);
        return worker;
    }

    private DisaggregatedGenerator generator(URI prefill, URI decode) {
        WorkerResilience resilience = new WorkerResilience(new ResilienceProperties(Duration.ofSeconds(10),
                Duration.ofSeconds(1), new ResilienceProperties.Retry(1, Duration.ofMillis(1), Duration.ofMillis(5)),
                new ResilienceProperties.CircuitBreaker(50, 20, 10, Duration.ofSeconds(10), 2),
                new ResilienceProperties.Bulkhead(64)));
        resilience.bindTo(new SimpleMeterRegistry());
        return new DisaggregatedGenerator(WebClient.create(), new WorkerPool("prefill", List.of(prefill), resilience),
                new WorkerPool("decode", List.of(decode), resilience), contexts, resilience, Schedulers.parallel());
    }

    private static GenerationRequest request(String id, int n) {
        return new GenerationRequest(id, "ripcord-tiny", new int[] {1, 2, 3}, 4, 0.0, 1.0, OptionalLong.of(1),
                List.of(), false, true, false, null, null, GenerationRequest.Kind.COMPLETION, SamplingOptions.NONE, n,
                false);
    }

    /** The ID of a fake's in-band cancel ("ID REASON before close"). */
    private static String idOf(String cancel) {
        return cancel.substring(0, cancel.indexOf(' '));
    }
}
