package dev.ripcord.prefill.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.PrefixCacheListener;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.Pairing;
import dev.ripcord.protocol.prefix.PrefixKeys;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The operator's clear of a prefill worker's prefix cache ({@code DELETE /internal/v1/prefix-cache}): the pages no
 * request holds are freed at once, and the worker's listener (the publisher of page events) hears
 * {@code cleared()}, as it did when the worker started; {@code GET} reports the cache's figures.
 */
class PrefixCacheRouteTest {
    private InferenceEngine engine;
    private TransferAgent agent;
    private KvRegion poolRegion;
    private PrefillScheduler scheduler;
    private WebTestClient client;
    private final List<String> told = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() {
        engine = InferenceEngine.create(Preset.TINY, 3, EngineOptions.defaults().withThreads(1).withPageTokens(16)
                .withKvPages(8).withMaxChunkTokens(64));
        agent = TransferAgent.start(TransferAgentOptions.defaults("prefix-cache-route").withBackend(Backend.TCP));
        poolRegion = agent.registerRegion(engine.pagePool().segment());
        WorkerContext context = new WorkerContext(engine, agent, poolRegion, new CancellationRegistry(),
                new SimpleMeterRegistry(), new SchedulerJournal(64), EngineLoop.Mode.MANUAL,
                LifecyclePublisher.disabled(), new Pairing("preset:tiny/seed:3", engine.numerics()));
        PrefillProperties properties = new PrefillProperties(16, 1, 8, Duration.ofSeconds(1));
        scheduler = new PrefillScheduler(context, properties, new PrefixCacheListener() {
            @Override
            public void stored(long[] keys) {
                told.add("stored " + keys.length);
            }

            @Override
            public void removed(long[] keys) {
                told.add("removed " + keys.length);
            }

            @Override
            public void cleared() {
                told.add("cleared");
            }
        });
        CancelProperties cancel = new CancelProperties(CancelPropagation.BOTH, false, "ripcord.cancellations",
                "ripcord.cancellations.dlt", 3, 1, Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10),
                Duration.ofMinutes(10), 100_000, false, Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200),
                "prefix-cache-route");
        client = WebTestClient.bindToRouterFunction(new WorkerRoutes(context, cancel, Duration.ofSeconds(1))
                .router(new PrefillRoutes(scheduler, properties, context))).build();
    }

    @AfterEach
    void stop() {
        scheduler.close();
        poolRegion.close();
        agent.close();
        engine.close();
    }

    @Test
    void anOperatorsClearFreesTheCachedPagesAndIsPublished() {
        int[] prompt = new int[50];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = 'a' + i % 26;
        }
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.reusePrefix(seq, prompt, PrefixKeys.keys(PrefixKeys.seed("preset:tiny/seed:3", 16, null), 16, prompt));
        engine.prefill(seq, prompt, 0, 50);
        engine.free(seq);
        assertThat(engine.pagePool().pagesEvictable()).isEqualTo(3);

        client.get().uri(InternalApi.PREFIX_CACHE).exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.pagesCached").isEqualTo(3).jsonPath("$.queriedTokens").isEqualTo(50);
        client.delete().uri(InternalApi.PREFIX_CACHE).exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.clearedPages").isEqualTo(3);

        assertThat(engine.pagePool().pagesEvictable()).isZero();
        assertThat(engine.pagePool().pagesFree()).isEqualTo(engine.pagePool().pageCount());
        assertThat(told).as("cleared at start, then the pages, then the operator's clear")
                .containsExactly("cleared", "stored 3", "cleared");
    }
}
