package dev.ripcord.decode.http;

import java.time.Duration;
import java.util.List;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.view.ViewResolver;
import reactor.core.Disposable;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * With {@code ripcord.cancel.propagation=kafka} a closed job stream is no cancel by itself: the gateway's cancel comes
 * on Kafka. A gateway that crashed publishes none, so a job whose stream closed before it ended is aborted once the
 * closed-stream grace is over, with {@code CONNECTION_CLOSED}, exactly once; a Kafka cancel within the grace is the
 * one abort, and the grace's end then changes nothing. The grace runs on a virtual clock: the test moves it.
 */
@DecodeWorkerTest
class DecodeClosedStreamGraceTest {

    private static final Duration GRACE = Duration.ofSeconds(5);

    @Autowired
    DecodeRoutes routes;

    @Autowired
    WorkerContext context;

    @Autowired
    CancelProperties cancel;

    @Autowired
    CancellationRegistry registry;

    @Test
    void aStreamClosedWithoutAFinishIsAbortedOnceTheGraceIsOver() {
        String id = "closed-stream-grace-1";
        VirtualTimeScheduler clock = VirtualTimeScheduler.create();
        Disposable stream = openAndWaitingForKv(id, clock);

        stream.dispose(); // the gateway's connection closes: it crashed, no cancel will come
        clock.advanceTimeBy(GRACE.minusMillis(1));
        assertThat(events(id)).as("within the grace the job waits for a cancel on Kafka")
                .doesNotContain("CANCEL_OBSERVED", "TRANSFER_ABORTED");
        assertThat(registry.isCancelled(id)).isFalse();

        clock.advanceTimeBy(Duration.ofMillis(1));
        await().atMost(Duration.ofSeconds(20)).until(() -> events(id).contains("TRANSFER_ABORTED"));
        assertThat(RequestJournal.entries(context, id)).filteredOn(e -> e.event().equals("TRANSFER_ABORTED"))
                .singleElement().satisfies(e -> assertThat(e.detail()).contains("CONNECTION_CLOSED"));
        assertThat(RequestJournal.entries(context, id)).filteredOn(e -> e.event().equals("CANCEL_OBSERVED"))
                .singleElement().satisfies(e -> assertThat(e.detail()).contains("CONNECTION_CLOSED"));
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);

        clock.advanceTimeBy(GRACE.multipliedBy(10));
        assertThat(events(id)).as("one abort").filteredOn("CANCEL_OBSERVED"::equals).hasSize(1);
    }

    @Test
    void aKafkaCancelWithinTheGraceIsTheOneAbort() {
        String id = "closed-stream-grace-2";
        VirtualTimeScheduler clock = VirtualTimeScheduler.create();
        Disposable stream = openAndWaitingForKv(id, clock);

        stream.dispose(); // the gateway closed the stream and published its cancel
        registry.cancel(id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        await().atMost(Duration.ofSeconds(20)).until(() -> events(id).contains("TRANSFER_ABORTED"));
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);

        int tombstones = registry.tombstones(); // the aborted job's own cancel is kept, for a late copy of it
        clock.advanceTimeBy(GRACE);
        assertThat(RequestJournal.entries(context, id)).filteredOn(e -> e.event().equals("CANCEL_OBSERVED"))
                .singleElement().satisfies(e -> assertThat(e.detail()).contains("CLIENT_CANCEL")
                        .doesNotContain("CONNECTION_CLOSED"));
        assertThat(registry.tombstones()).as("the grace's end cancelled nothing more")
                .isEqualTo(tombstones);
    }

    /**
     * A decode job accepted on a worker with Kafka-only propagation, reserved and waiting for KV that never comes,
     * its events being written to the gateway: the returned handle closes that stream.
     */
    private Disposable openAndWaitingForKv(String id, VirtualTimeScheduler clock) {
        WorkerRoutes kafkaOnly = new WorkerRoutes(context, withPropagation(cancel, CancelPropagation.KAFKA),
                Duration.ofSeconds(1), GRACE, clock);
        ServerResponse response = routes.accept(new DecodeRequest(id, 4, 4, new Sampling(0.0, 1.0, 7L), false),
                kafkaOnly).block(Duration.ofSeconds(30));
        assertThat(response).isNotNull();
        assertThat(events(id)).contains("RESERVED");
        MockServerWebExchange exchange = MockServerWebExchange.from(
                MockServerHttpRequest.post("/internal/v1/decode"));
        return response.writeTo(exchange, new StrategiesContext()).subscribe();
    }

    private List<String> events(String id) {
        return RequestJournal.entries(context, id).stream().map(JournalEntry::event).toList();
    }

    private static CancelProperties withPropagation(CancelProperties p, CancelPropagation propagation) {
        return new CancelProperties(propagation, p.consume(), p.topic(), p.dltTopic(), p.partitions(),
                p.replicationFactor(), p.retention(), p.dltRetention(), p.replayWindow(), p.tombstoneTtl(),
                p.tombstoneMaxSize(), p.provisionTopics(), p.adminTimeout(), p.publishQueueCapacity(),
                p.publishMaxAttempts(), p.publishRetryBackoff(), p.instanceId());
    }

    private static final class StrategiesContext implements ServerResponse.Context {
        private final HandlerStrategies strategies = HandlerStrategies.withDefaults();

        @Override
        public List<HttpMessageWriter<?>> messageWriters() {
            return strategies.messageWriters();
        }

        @Override
        public List<ViewResolver> viewResolvers() {
            return List.of();
        }
    }
}
