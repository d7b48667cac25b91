package dev.ripcord.gateway.serving;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.model.ModelProperties;
import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.CancelReason;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Mixed pods refuse to pair, through the real generator and fake workers: a decode worker that serves another model
 * than the gateway's is not paired with any prefill worker, and decode's pairing (model and numerics) travels to
 * the prefill worker, whose refusal ({@code 409 pairing_mismatch}) ends the request with an error that names it.
 */
class PairingTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String NUMERICS = "lanes=16,int8=native,quantizedDot=decode";
    /** The gateway's model, as {@code ripcord.engine.preset=tiny} with the default seed names it. */
    private static final String MODEL = new ModelProperties("tiny", null, null, null, 4096).identity();

    private final RequestContexts contexts = new RequestContexts(new CancelPublisher() {
        @Override
        public CompletableFuture<Void> publish(CancelEvent event) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> publish(String requestId, CancelReason reason) {
            return CompletableFuture.completedFuture(null);
        }
    }, new CancelProperties(CancelPropagation.BOTH, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3,
            1, Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000, false,
            Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "pairing-test"), new SimpleMeterRegistry(),
            Clock.systemUTC(), Duration.ofHours(1));
    private final List<FakeWorker> workers = new ArrayList<>();

    @AfterEach
    void stop() {
        await().atMost(WAIT).until(() -> contexts.liveRequests() == 0);
        workers.forEach(FakeWorker::close);
    }

    @Test
    void theGatewaysModelIdentityIsThePresetAndSeedAllServicesRead() {
        assertThat(MODEL).isEqualTo("preset:tiny/seed:42");
        assertThat(new ModelProperties("tiny", null, null, null, 4096, 7).identity()).isEqualTo("preset:tiny/seed:7");
    }

    @Test
    void aDecodeWorkerServingAnotherModelIsNotPairedAndNoPrefillIsSent() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(
                Flux.just(FakeWorker.reserved("sha256:0123abcd", NUMERICS)), Flux.never())));
        FakeWorker prefill = worker(FakeWorker.prefillDone());

        Throwable failure = generate(generator(prefill.uri(), decode.uri()), "other-model");

        assertThat(failure).isInstanceOf(GenerationFailedException.class)
                .hasMessageContaining("sha256:0123abcd").hasMessageContaining(MODEL);
        assertThat(prefill.calls()).as("no prefill for a decode worker of another model").isZero();
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1);
    }

    @Test
    void decodesPairingTravelsToPrefillAndAMatchingPairAnswers() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved(MODEL, NUMERICS)),
                Flux.just(FakeWorker.token(0, true)))));
        FakeWorker prefill = worker(FakeWorker.prefillDone());

        List<GeneratedToken> tokens = generator(prefill.uri(), decode.uri()).generate(request("paired"))
                .contextWrite(Context.of(ApiKeys.ATTRIBUTE, "key-aaaaaaaaaaaa")).collectList().block(WAIT);

        assertThat(tokens).hasSize(1);
        assertThat(prefill.bodies()).singleElement().asString()
                .contains("\"pairing\":{\"model\":\"" + MODEL + "\",\"numerics\":\"" + NUMERICS + "\"}");
    }

    @Test
    void aPrefillWorkerRefusingDecodesPairingEndsTheRequestWithItsReason() {
        FakeWorker decode = worker(FakeWorker.stream(Flux.concat(Flux.just(FakeWorker.reserved(MODEL, NUMERICS)),
                Flux.never())));
        FakeWorker prefill = worker((call, response) -> response.status(409)
                .header("Content-Type", "application/json")
                .sendString(reactor.core.publisher.Mono.just("{\"type\":\"FAILED\",\"code\":\"pairing_mismatch\","
                        + "\"message\":\"numerics lanes=8,int8=lanes,quantizedDot=decode here, " + NUMERICS
                        + " at the peer\"}")));

        Throwable failure = generate(generator(prefill.uri(), decode.uri()), "mixed-numerics");

        assertThat(failure).isInstanceOf(GenerationFailedException.class);
        assertThat(failure.getCause()).hasMessageContaining("pairing_mismatch").hasMessageContaining(NUMERICS);
        assertThat(prefill.calls()).as("a 409 is not retried").isEqualTo(1);
        await().atMost(WAIT).until(() -> decode.closedByGateway() == 1);
    }

    private Throwable generate(DisaggregatedGenerator generator, String id) {
        return generator.generate(request(id)).contextWrite(Context.of(ApiKeys.ATTRIBUTE, "key-aaaaaaaaaaaa"))
                .then().map(v -> (Throwable) new AssertionError("the request succeeded"))
                .onErrorResume(e -> reactor.core.publisher.Mono.just(e)).block(WAIT);
    }

    private FakeWorker worker(FakeWorker.Script script) {
        FakeWorker worker = FakeWorker.start(script);
        workers.add(worker);
        return worker;
    }

    private DisaggregatedGenerator generator(URI prefill, URI decode) {
        WorkerResilience resilience = new WorkerResilience(new ResilienceProperties(Duration.ofSeconds(10),
                Duration.ofSeconds(1), new ResilienceProperties.Retry(3, Duration.ofMillis(1), Duration.ofMillis(5)),
                new ResilienceProperties.CircuitBreaker(50, 20, 10, Duration.ofSeconds(10), 2),
                new ResilienceProperties.Bulkhead(64)));
        resilience.bindTo(new SimpleMeterRegistry());
        return new DisaggregatedGenerator(WebClient.create(), new WorkerPool("prefill", List.of(prefill), resilience),
                new WorkerPool("decode", List.of(decode), resilience), contexts, resilience, Schedulers.parallel(),
                MODEL);
    }

    private static GenerationRequest request(String id) {
        return new GenerationRequest(id, "ripcord-tiny", new int[] {1, 2, 3}, 4, 0.0, 1.0, OptionalLong.of(1),
                List.of(), false, true, false, null, null, GenerationRequest.Kind.COMPLETION, SamplingOptions.NONE, 1,
                false);
    }
}
