package dev.ripcord.gateway.serving;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.SamplingOptions;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.model.ModelProperties;
import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.RoutingPolicy;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.gateway.routing.prefix.PrefixIndex;
import dev.ripcord.gateway.routing.prefix.PrefixRouting;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixKeys;
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
 * The prefill leg of a real request goes to the worker whose cached pages the index says hold the prompt's prefix,
 * under the request's {@code cache_salt}, and the salt travels in the {@code PrefillRequest}.
 */
class CacheAwarePrefillLegTest {

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String NUMERICS = "lanes=16,int8=native,quantizedDot=decode";
    private static final String MODEL = new ModelProperties("tiny", null, null, null, 4096).identity();
    private static final int PAGE = 16;
    private static final int[] PROMPT = IntStream.range(0, 3 * PAGE + 5).map(i -> 10 + i).toArray();

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
            Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "cache-aware-test"), new SimpleMeterRegistry(),
            Clock.systemUTC(), Duration.ofHours(1));
    private final List<FakeWorker> workers = new ArrayList<>();

    @AfterEach
    void stop() {
        await().atMost(WAIT).until(() -> contexts.liveRequests() == 0);
        workers.forEach(FakeWorker::close);
    }

    @Test
    void thePrefillLegGoesToTheWorkerHoldingThePromptsPrefixUnderItsSalt() {
        List<FakeWorker> prefills = List.of(worker(FakeWorker.prefillDone()), worker(FakeWorker.prefillDone()),
                worker(FakeWorker.prefillDone()));
        FakeWorker holder = prefills.get(2);
        PrefixIndex index = new PrefixIndex();
        long[] keys = PrefixKeys.keys(PrefixKeys.seed(MODEL, PAGE, "tenant-7"), PAGE, PROMPT);
        String id = holder.uri().getAuthority();
        index.apply(new PrefixCacheEvent(id, 1, 1, PrefixCacheEvent.Kind.CLEARED, PAGE, null));
        index.apply(new PrefixCacheEvent(id, 1, 2, PrefixCacheEvent.Kind.STORED, PAGE, keys));

        for (int i = 0; i < 3; i++) {
            FakeWorker decode = worker(FakeWorker.stream(Flux.just(FakeWorker.reserved(MODEL, NUMERICS),
                    FakeWorker.token(0, true))));
            List<GeneratedToken> tokens = generator(prefills.stream().map(FakeWorker::uri).toList(),
                    new PrefixRouting(index, MODEL, 1.0), decode.uri()).generate(request("salted-" + i, "tenant-7"))
                    .contextWrite(Context.of(ApiKeys.ATTRIBUTE, "key-aaaaaaaaaaaa")).collectList().block(WAIT);
            assertThat(tokens).hasSize(1);
        }
        assertThat(holder.calls()).as("every salted request went to the holder").isEqualTo(3);
        assertThat(prefills.get(0).calls() + prefills.get(1).calls()).isZero();
        assertThat(holder.bodies()).allSatisfy(body -> assertThat(body).asString()
                .contains("\"cacheSalt\":\"tenant-7\""));
    }

    private FakeWorker worker(FakeWorker.Script script) {
        FakeWorker worker = FakeWorker.start(script);
        workers.add(worker);
        return worker;
    }

    private DisaggregatedGenerator generator(List<URI> prefills, PrefixRouting routing, URI decode) {
        WorkerResilience resilience = new WorkerResilience(ResilienceProperties.defaults());
        resilience.bindTo(new SimpleMeterRegistry());
        WorkerPool prefillPool = new WorkerPool("prefill", resilience, RoutingPolicy.CACHE_AWARE);
        prefillPool.update(prefills);
        return new DisaggregatedGenerator(WebClient.create(), prefillPool,
                new WorkerPool("decode", List.of(decode), resilience), contexts, resilience, Schedulers.parallel(),
                MODEL, routing);
    }

    private static GenerationRequest request(String id, String salt) {
        return new GenerationRequest(id, "ripcord-tiny", PROMPT, 4, 0.0, 1.0, OptionalLong.of(1), List.of(), false,
                true, false, null, null, GenerationRequest.Kind.COMPLETION, SamplingOptions.NONE, 1, false, salt);
    }
}
