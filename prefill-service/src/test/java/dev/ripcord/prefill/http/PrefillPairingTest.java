package dev.ripcord.prefill.http;

import java.time.Duration;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.Pairing;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill worker refuses to push KV to a decode worker of another model or numeric definition: the gateway hands
 * it decode's {@link Pairing}, and a mismatch is a 409 {@code pairing_mismatch} naming both values, before anything
 * is registered or computed. Its own pairing is on its status.
 */
class PrefillPairingTest {

    private static final String MODEL = "preset:tiny/seed:3";

    private static InferenceEngine engine;
    private static TransferAgent agent;
    private static KvRegion poolRegion;

    private final CancellationRegistry registry = new CancellationRegistry();
    private WorkerContext context;
    private PrefillScheduler scheduler;
    private WebTestClient client;

    @BeforeAll
    static void start() {
        engine = InferenceEngine.create(Preset.TINY, 3, EngineOptions.defaults().withThreads(1).withPageTokens(16)
                .withKvPages(8).withMaxChunkTokens(16));
        agent = TransferAgent.start(TransferAgentOptions.defaults("prefill-pairing").withBackend(Backend.TCP));
        poolRegion = agent.registerRegion(engine.pagePool().segment());
    }

    @AfterAll
    static void stop() {
        poolRegion.close();
        agent.close();
        engine.close();
    }

    @BeforeEach
    void routes() {
        context = new WorkerContext(engine, agent, poolRegion, registry, new SimpleMeterRegistry(),
                new SchedulerJournal(64), EngineLoop.Mode.MANUAL, LifecyclePublisher.disabled(),
                new Pairing(MODEL, engine.numerics()));
        PrefillProperties properties = new PrefillProperties(16, 1, 8, Duration.ofSeconds(1));
        scheduler = new PrefillScheduler(context, properties);
        PrefillRoutes endpoint = new PrefillRoutes(scheduler, properties, context);
        CancelProperties cancel = new CancelProperties(CancelPropagation.BOTH, false, "ripcord.cancellations",
                "ripcord.cancellations.dlt", 3, 1, Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10),
                Duration.ofMinutes(10), 100_000, false, Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200),
                "prefill-pairing");
        client = WebTestClient.bindToRouterFunction(new WorkerRoutes(context, cancel, Duration.ofSeconds(1))
                .router(endpoint)).build();
    }

    @AfterEach
    void close() {
        scheduler.close();
    }

    @Test
    void aDecodeWorkerOfAnotherModelIsRefusedWithBothModelsNamed() {
        Failed refusal = refusal(new Pairing("sha256:0123abcd", engine.numerics()));

        assertThat(refusal.code()).isEqualTo(Failed.PAIRING_MISMATCH);
        assertThat(refusal.message()).contains("model " + MODEL + " here, sha256:0123abcd at the peer");
        assertThat(registry.liveRegistrations()).as("nothing registered").isZero();
        assertThat(scheduler.queued()).isZero();
    }

    @Test
    void aDecodeWorkerWithAnotherNumericDefinitionIsRefusedWithBothNamed() {
        String other = engine.numerics().contains("int8=native")
                ? engine.numerics().replace("int8=native", "int8=lanes")
                : engine.numerics().replace("int8=lanes", "int8=native");
        Failed refusal = refusal(new Pairing(MODEL, other));

        assertThat(refusal.code()).isEqualTo(Failed.PAIRING_MISMATCH);
        assertThat(refusal.message()).contains("numerics " + engine.numerics() + " here, " + other + " at the peer");
        assertThat(registry.liveRegistrations()).isZero();
    }

    @Test
    void aMatchingPairingPassesTheCheck() {
        // The bogus descriptor is the scheduler's to refuse (400): the pairing check let the request through.
        client.post().uri(InternalApi.PREFILL).header(RequestIds.HEADER, "paired-1")
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue(request("paired-1", new Pairing(MODEL, engine.numerics())))
                .exchange().expectStatus().isBadRequest();
    }

    @Test
    void theStatusNamesTheWorkersPairing() {
        WorkerStatus status = client.get().uri(InternalApi.STATUS).exchange().expectStatus().isOk()
                .expectBody(WorkerStatus.class).returnResult().getResponseBody();

        assertThat(status.pairing()).isEqualTo(new Pairing(MODEL, engine.numerics()));
    }

    private Failed refusal(Pairing decodes) {
        return client.post().uri(InternalApi.PREFILL).header(RequestIds.HEADER, "mixed-1")
                .contentType(MediaType.APPLICATION_JSON).bodyValue(request("mixed-1", decodes))
                .exchange().expectStatus().isEqualTo(409)
                .expectBody(Failed.class).returnResult().getResponseBody();
    }

    private static PrefillRequest request(String id, Pairing pairing) {
        return new PrefillRequest(id, new int[] {1, 2, 3}, new Sampling(0.0, 1.0, 1L), "not-a-descriptor",
                pairing);
    }
}
