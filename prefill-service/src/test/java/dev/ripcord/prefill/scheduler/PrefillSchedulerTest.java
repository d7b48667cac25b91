package dev.ripcord.prefill.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import dev.ripcord.cancel.CancelOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Sabotage;
import dev.ripcord.cancel.testing.CancellationLeakExtension;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.TransferAbortedException;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.protocol.TransferMetadata;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.job.JobState;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The prefill scheduler in process: a tiny engine, its transfer agent, and a second agent on loopback standing in
 * for decode (a bare receive session per request, so every outcome of the transfer can be forced). The engine loop
 * is stepped by the test, so a cancel lands exactly where the test puts it. The two-worker matrix and hammer are
 * in decode-service ({@code CancelMatrixTest}, {@code CancelHammerTest}).
 */
@ExtendWith(KvLeakCheck.class)
class PrefillSchedulerTest {

    private static final int CHUNK = 16;
    private static final Duration HANG_GUARD = Duration.ofSeconds(20);

    private static InferenceEngine engine;
    private static TransferAgent agent;
    private static TransferAgent decodeSide;
    private static KvRegion poolRegion;
    private static KvRegion landing;
    private static int counter;

    private final CancellationRegistry registry = new CancellationRegistry();
    private final SchedulerJournal journal = new SchedulerJournal(4096);
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final PrefillScheduler scheduler = new PrefillScheduler(
            new WorkerContext(engine, agent, poolRegion, registry, meters, journal, EngineLoop.Mode.MANUAL),
            new PrefillProperties(CHUNK, 1, 8, Duration.ofSeconds(1)));

    @RegisterExtension
    final CancellationLeakExtension leaks = CancellationLeakExtension.afterEachTest(() -> registry);

    @BeforeAll
    static void start() {
        engine = InferenceEngine.create(Preset.TINY, 3, EngineOptions.defaults().withThreads(1).withPageTokens(16)
                .withKvPages(32).withMaxChunkTokens(CHUNK));
        agent = TransferAgent.start(TransferAgentOptions.defaults("prefill-under-test").withBackend(Backend.TCP));
        decodeSide = TransferAgent.start(TransferAgentOptions.defaults("decode-stand-in").withBackend(Backend.TCP));
        poolRegion = agent.registerRegion(engine.pagePool().segment());
        landing = decodeSide.allocateRegion(engine.pagePool().pageBytes() * 8);
    }

    @AfterAll
    static void stop() {
        landing.close();
        poolRegion.close();
        decodeSide.close();
        agent.close();
        engine.close();
    }

    @AfterEach
    void quiet() {
        engine.onLayerBoundary(null);
        runUntil("pages back", () -> engine.pagePool().pagesLive() == 0 && agent.stats().liveSessions() == 0
                && decodeSide.stats().liveSessions() == 0);
        scheduler.engineLoop().runUntilIdle(10_000);
        scheduler.close();
        // Every test's prompts are alike: each starts from an empty prefix cache, as it would on a fresh worker.
        engine.clearPrefixCache();
    }

    /** A request as the gateway would send it, with its receive session at the stand-in decode. */
    private final class Prompt {
        final String id = "prefill-test-" + (++counter);
        final ReceiveSession receive;
        final PrefillJob job;
        final List<PrefillEvent> events = Collections.synchronizedList(new ArrayList<>());
        private volatile boolean eventsEnded;

        Prompt(int tokens) {
            this(tokens, (tokens + 15) / 16);
        }

        /** A prompt whose receive session offers only {@code pages} pages (fewer than it needs: a send throws). */
        Prompt(int tokens, int pages) {
            long pageBytes = engine.pagePool().pageBytes();
            List<ByteRange> targets = IntStream.range(0, pages).mapToObj(p -> new ByteRange(p * pageBytes, pageBytes))
                    .toList();
            receive = decodeSide.openReceive(id, landing, targets);
            int[] prompt = IntStream.range(0, tokens).map(i -> 'a' + i % 26).toArray();
            job = scheduler.submit(new PrefillRequest(id, prompt, new Sampling(0, 1, 5),
                    receive.descriptor().encode()));
            job.events().subscribe(events::add, error -> eventsEnded = true, () -> eventsEnded = true);
        }

        /**
         * Every event the job emitted, once its stream has ended. The job's state turns terminal just before its
         * last event is emitted, on whichever thread ended it (a transport thread for DONE), so a test that saw the
         * terminal state waits for the stream's end before it reads the last event.
         */
        List<PrefillEvent> allEvents() {
            runUntil("the job's event stream to end", () -> eventsEnded);
            return List.copyOf(events);
        }

        List<String> journal() {
            return journal.since(0).stream().filter(e -> e.requestId().equals(id)).map(JournalEntry::event).toList();
        }
    }

    private void runUntil(String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (!scheduler.engineLoop().runOnce()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("hung waiting for " + what + ": " + journal.since(0));
                }
                Thread.yield();
            }
        }
    }

    private static AbortReason.Cancel typedAbortAtDecode(ReceiveSession receive) {
        CompletableFuture<byte[]> completion = receive.completion();
        // The receiver learns the abort from the ABORT frame, on its own transport thread: prefill's side can be
        // freed before that frame is read. Wait for the receive session's outcome (a hang guard, not a timing).
        try {
            completion.handle((bytes, abort) -> null).get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException | java.util.concurrent.ExecutionException
                 | java.util.concurrent.TimeoutException e) {
            throw new AssertionError("decode's receive session never learned how the transfer ended", e);
        }
        return TransferAbortedException.reasonOf(completion).flatMap(AbortReason::cancellation).orElse(null);
    }

    @Test
    void completesAndDeliversTheFirstTokenWithTheKv() {
        Prompt p = new Prompt(40);
        runUntil("done", () -> p.job.state().isTerminal());
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.job.state()).isEqualTo(JobState.DONE);
        int first = TransferMetadata.decodeFirstToken(p.receive.completion().join());
        assertThat(p.allEvents()).last().isEqualTo(new PrefillEvent.Done(first));
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CHUNK", "CHUNK", "DONE", "FREED");
        assertThat(scheduler.aborts()).isZero();
    }

    @Test
    void queueAndPrefillTimeAreRecordedOncePerPromptAndTheGaugesFollowIt() {
        Prompt p = new Prompt(40);
        assertThat(meters.get("ripcord.num.requests.waiting").gauge().value()).isEqualTo(1);
        assertThat(meters.get("ripcord.num.requests.running").gauge().value()).isZero();
        assertThat(meters.get("ripcord.request.queue.time").timer().count()).isZero();

        runUntil("started", () -> p.journal().contains("STARTED"));
        assertThat(meters.get("ripcord.num.requests.waiting").gauge().value()).isZero();
        assertThat(meters.get("ripcord.num.requests.running").gauge().value()).isEqualTo(1);
        assertThat(meters.get("ripcord.request.queue.time").timer().count()).isEqualTo(1);
        assertThat(meters.get("ripcord.request.prefill.time").timer().count()).isZero();

        runUntil("done", () -> p.job.state().isTerminal());
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(meters.get("ripcord.num.requests.running").gauge().value()).isZero();
        Timer prefill = meters.get("ripcord.request.prefill.time").timer();
        assertThat(prefill.count()).isEqualTo(1);
        // one recording, in every cumulative bucket from the one that holds it up to vLLM's last (7680 s)
        CountAtBucket[] buckets = prefill.takeSnapshot().histogramCounts();
        assertThat(buckets).hasSize(29);
        assertThat(buckets[buckets.length - 1].bucket(TimeUnit.SECONDS)).isEqualTo(7680.0);
        assertThat(buckets[buckets.length - 1].count()).isEqualTo(1);
        assertThat(meters.get("ripcord.request.queue.time").timer().count()).isEqualTo(1);
    }

    @Test
    void aPromptCancelledWhileQueuedRecordsNoQueueOrPrefillTime() {
        Prompt p = new Prompt(40);
        registry.cancel(p.id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        runUntil("the transfer to end", () -> p.receive.released().isDone());
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(meters.get("ripcord.request.queue.time").timer().count()).isZero();
        assertThat(meters.get("ripcord.request.prefill.time").timer().count()).isZero();
        assertThat(meters.get("ripcord.num.requests.waiting").gauge().value()).isZero();
    }

    @Test
    void cancelWhileQueuedDoesNoWorkAndTellsDecodeWhyTyped() {
        Prompt p = new Prompt(40);
        assertThat(registry.cancel(p.id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ABORTED);
        runUntil("the transfer to end", () -> p.receive.released().isDone());
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(typedAbortAtDecode(p.receive))
                .isEqualTo(new AbortReason.Cancel(CancelReason.CLIENT_CANCEL, CancelSource.KAFKA));
        assertThat(p.allEvents()).containsExactly(new PrefillEvent.Queued(0),
                new Cancelled(CancelReason.CLIENT_CANCEL, CancelSource.KAFKA));
        assertThat(p.journal()).containsExactly("QUEUED", "CANCEL_OBSERVED", "REMOVED_FROM_QUEUE");
        assertThat(scheduler.aborts()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancellations", "service", "prefill", "phase", "queued", "path", "kafka")
                .count()).isEqualTo(1);
    }

    @Test
    void cancelBetweenChunksStopsAtTheNextCheckPointAndFreesAfterRelease() {
        Prompt p = new Prompt(40);
        runUntil("the first chunk", () -> p.journal().contains("CHUNK"));
        registry.cancel(p.id, CancelReason.CLIENT_STALLED, CancelSource.IN_BAND);
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CANCEL_OBSERVED", "STOPPED", "FREED");
        assertThat(p.allEvents()).last().isEqualTo(new Cancelled(CancelReason.CLIENT_STALLED, CancelSource.IN_BAND));
        assertThat(typedAbortAtDecode(p.receive))
                .isEqualTo(new AbortReason.Cancel(CancelReason.CLIENT_STALLED, CancelSource.IN_BAND));
        assertThat(scheduler.chunksAfterCancel()).isZero();
        assertThat(scheduler.aborts()).isEqualTo(1);
    }

    /**
     * The bench-only {@code chunk-after-cancel} sabotage (the audit's NO_CHUNK_AFTER_CANCEL must catch it): armed, the
     * first cancel observed between chunks lets one more chunk be computed and journalled before the prompt stops;
     * the next prompt's cancel stops it as ever. Not armed: the test before this one.
     */
    @Test
    void armedChunkAfterCancelComputesOneChunkAfterTheFirstObservedCancelAndNoneAfterTheNext() {
        Sabotage.arm("chunk-after-cancel", "1");
        try {
            Prompt sabotaged = new Prompt(40);
            runUntil("the first chunk", () -> sabotaged.journal().contains("CHUNK"));
            registry.cancel(sabotaged.id, CancelReason.CLIENT_STALLED, CancelSource.IN_BAND);
            runUntil("freed", () -> sabotaged.journal().contains("FREED"));
            scheduler.engineLoop().runUntilIdle(10_000);

            assertThat(sabotaged.journal())
                    .containsExactly("QUEUED", "STARTED", "CHUNK", "CANCEL_OBSERVED", "CHUNK", "STOPPED", "FREED");
            assertThat(sabotaged.job.state()).isEqualTo(JobState.CANCELLED);
            assertThat(scheduler.chunksAfterCancel()).isEqualTo(1);

            engine.clearPrefixCache(); // the next prompt is alike: it must compute its chunks, not reuse them
            Prompt next = new Prompt(40);
            runUntil("the first chunk", () -> next.journal().contains("CHUNK"));
            registry.cancel(next.id, CancelReason.CLIENT_STALLED, CancelSource.IN_BAND);
            runUntil("freed", () -> next.journal().contains("FREED"));
            scheduler.engineLoop().runUntilIdle(10_000);

            assertThat(next.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CANCEL_OBSERVED", "STOPPED",
                    "FREED");
            assertThat(scheduler.chunksAfterCancel()).isEqualTo(1);
            assertThat(scheduler.aborts()).isEqualTo(2);
        } finally {
            Sabotage.disarm();
        }
    }

    /** As above, for the cancel of a queued prompt: it starts, computes one chunk, and stops at the check point. */
    @Test
    void armedChunkAfterCancelComputesOneChunkOfAPromptCancelledWhileQueued() {
        Sabotage.arm("chunk-after-cancel", "1");
        try {
            Prompt sabotaged = new Prompt(40);
            registry.cancel(sabotaged.id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            runUntil("freed", () -> sabotaged.journal().contains("FREED"));
            scheduler.engineLoop().runUntilIdle(10_000);

            assertThat(sabotaged.journal())
                    .containsExactly("QUEUED", "CANCEL_OBSERVED", "STARTED", "CHUNK", "STOPPED", "FREED");
            assertThat(sabotaged.job.state()).isEqualTo(JobState.CANCELLED);
            assertThat(scheduler.chunksAfterCancel()).isEqualTo(1);
        } finally {
            Sabotage.disarm();
        }
    }

    /**
     * A cancel that arrives while a chunk computes (here: delivered through the registry at the boundary
     * before the second chunk's layer 1, on the loop thread, as a Netty thread would deliver it at that moment)
     * stops the chunk at that layer boundary. Nothing of the stopped chunk is sent (only the first chunk's page
     * was), the journal says where the cancel found the forward and where it stopped, and every page comes back.
     */
    @Test
    void cancelInsideAChunkStopsItAtTheNextLayerBoundaryAndSendsNothingOfIt() {
        Prompt p = new Prompt(40);
        runUntil("the first chunk", () -> p.journal().contains("CHUNK"));
        int layers = engine.config().layers();
        List<Integer> boundaries = Collections.synchronizedList(new ArrayList<>());
        engine.onLayerBoundary(layer -> {
            boundaries.add(layer);
            if (layer == 1) {
                registry.cancel(p.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
            }
        });
        runUntil("stopped", () -> p.job.state().isTerminal());
        engine.onLayerBoundary(null);
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);

        assertThat(boundaries).as("the second chunk's forward went no further than boundary 1").containsExactly(0, 1);
        assertThat(p.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CANCEL_OBSERVED", "STOPPED", "FREED");
        assertThat(detail(p, "CANCEL_OBSERVED")).endsWith("via IN_BAND chunk=1 layer=1/" + layers);
        assertThat(detail(p, "STOPPED")).isEqualTo("16/40 tokens chunk=1 layer=1/" + layers);
        assertThat(p.job.tokensDone).as("the stopped chunk is not counted").isEqualTo(CHUNK);
        assertThat(p.job.pagesSent).as("only the first chunk's page was pushed").isEqualTo(1);
        assertThat(p.receive.bytesReceived()).as("decode received nothing of the stopped chunk")
                .isLessThanOrEqualTo(engine.pagePool().pageBytes());
        assertThat(p.allEvents()).last().isEqualTo(new Cancelled(CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND));
        assertThat(typedAbortAtDecode(p.receive))
                .isEqualTo(new AbortReason.Cancel(CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND));
        assertThat(scheduler.chunksAfterCancel()).as("no chunk completed after the cancel").isZero();
        assertThat(scheduler.chunksComputed()).isEqualTo(1);
        assertThat(engine.stats().prefillStops()).isPositive();
        assertThat(scheduler.aborts()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancellations", "service", "prefill", "phase", "prefill", "path", "in_band")
                .count()).isEqualTo(1);
    }

    /**
     * A cancel that arrives while a layer computes (here: delivered through the registry at the first work item of
     * the second chunk's layer 1, as a Netty or Kafka thread would deliver it at that moment) does not wait for the
     * layer to end: the chunk abandons layer 1 before its next work item. The journal says it stopped inside the
     * layer where the cancel found the forward; nothing of the stopped chunk is sent, and every page comes back.
     */
    @Test
    void cancelWhileALayerComputesStopsTheChunkInsideThatLayerWithoutReachingTheNextBoundary() {
        Prompt p = new Prompt(40);
        runUntil("the first chunk", () -> p.journal().contains("CHUNK"));
        int layers = engine.config().layers();
        List<Integer> boundaries = Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean delivered = new java.util.concurrent.atomic.AtomicBoolean();
        engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
            @Override
            public void beforeLayer(int layer) {
                boundaries.add(layer);
            }

            @Override
            public void insideLayer(int layer) {
                if (layer == 1 && delivered.compareAndSet(false, true)) {
                    registry.cancel(p.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
                }
            }
        });
        runUntil("stopped", () -> p.job.state().isTerminal());
        engine.onLayerBoundary(null);
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);

        assertThat(boundaries).as("the second chunk's forward never reached boundary 2").containsExactly(0, 1);
        assertThat(p.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CANCEL_OBSERVED", "STOPPED", "FREED");
        assertThat(detail(p, "CANCEL_OBSERVED")).endsWith("via IN_BAND chunk=1 layer=1/" + layers);
        assertThat(detail(p, "STOPPED")).isEqualTo("16/40 tokens chunk=1 layer=1/" + layers + " inside");
        assertThat(p.job.tokensDone).as("the stopped chunk is not counted").isEqualTo(CHUNK);
        assertThat(p.job.pagesSent).as("only the first chunk's page was pushed").isEqualTo(1);
        assertThat(p.receive.bytesReceived()).as("decode received nothing of the stopped chunk")
                .isLessThanOrEqualTo(engine.pagePool().pageBytes());
        assertThat(scheduler.chunksAfterCancel()).as("no chunk completed after the cancel").isZero();
        assertThat(scheduler.aborts()).isEqualTo(1);
        assertThat(engine.pagePool().pagesLive()).as("every page came back").isZero();
    }

    @Test
    void aPromptAfterOneStoppedMidChunkComputesWhatItWouldOnAQuietEngine() {
        Prompt quiet = new Prompt(40);
        runUntil("done", () -> quiet.job.state().isTerminal());
        int expected = TransferMetadata.decodeFirstToken(quiet.receive.completion().join());
        runUntil("freed", () -> quiet.journal().contains("FREED"));
        engine.clearPrefixCache(); // the stopped prompt computes from its first token, as on a fresh worker

        Prompt stopped = new Prompt(40);
        engine.onLayerBoundary(layer -> {
            if (layer == 1) {
                registry.cancel(stopped.id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA);
            }
        });
        runUntil("stopped", () -> stopped.job.state().isTerminal());
        engine.onLayerBoundary(null);
        assertThat(detail(stopped, "STOPPED")).isEqualTo("0/40 tokens chunk=0 layer=1/" + engine.config().layers());

        Prompt after = new Prompt(40);
        runUntil("done", () -> after.job.state().isTerminal());
        assertThat(after.job.state()).isEqualTo(JobState.DONE);
        assertThat(TransferMetadata.decodeFirstToken(after.receive.completion().join())).isEqualTo(expected);
        runUntil("freed", () -> stopped.journal().contains("FREED") && after.journal().contains("FREED"));
    }

    /**
     * A prompt cancelled inside its third chunk keeps the pages its first two chunks completed; the same prompt
     * again starts from them, computes only the rest, says so in its DONE, and sends decode the whole KV with the
     * first token a cold run gives.
     */
    @Test
    void aRetryAfterACancelResumesFromTheLastCompletePageAndSaysHowManyTokensWereCached() {
        // the engine outlives the test; its counters do too
        double hitsBefore = meters.get("ripcord.prefix.cache.hits").functionCounter().count();
        double queriesBefore = meters.get("ripcord.prefix.cache.queries").functionCounter().count();
        Prompt cold = new Prompt(60);
        runUntil("done", () -> cold.job.state().isTerminal());
        int expected = TransferMetadata.decodeFirstToken(cold.receive.completion().join());
        runUntil("freed", () -> cold.journal().contains("FREED"));
        engine.clearPrefixCache();

        Prompt cancelled = new Prompt(60);
        engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
            @Override
            public void beforeLayer(int layer) {
            }

            @Override
            public void insideLayer(int layer) {
                if (cancelled.job.chunks == 2 && layer == 1) {
                    registry.cancel(cancelled.id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA);
                }
            }
        });
        runUntil("stopped", () -> cancelled.job.state().isTerminal());
        engine.onLayerBoundary(null);
        assertThat(detail(cancelled, "STOPPED")).isEqualTo("32/60 tokens chunk=2 layer=1/2 inside");
        runUntil("freed", () -> cancelled.journal().contains("FREED"));
        assertThat(engine.pagePool().pagesEvictable()).as("the two pages the completed chunks filled").isEqualTo(2);

        long computed = engine.stats().prefillTokens();
        Prompt retry = new Prompt(60);
        runUntil("done", () -> retry.job.state().isTerminal());
        assertThat(retry.job.state()).isEqualTo(JobState.DONE);
        assertThat(engine.stats().prefillTokens() - computed).as("tokens the retry computed").isEqualTo(60 - 32);
        assertThat(TransferMetadata.decodeFirstToken(retry.receive.completion().join())).isEqualTo(expected);
        assertThat(retry.allEvents()).last().isEqualTo(new PrefillEvent.Done(expected, 32));
        assertThat(meters.get("ripcord.prefix.cache.hits").functionCounter().count() - hitsBefore).isEqualTo(32);
        assertThat(meters.get("ripcord.prefix.cache.queries").functionCounter().count() - queriesBefore)
                .as("three prompts of 60 tokens").isEqualTo(180);
    }

    private String detail(Prompt p, String event) {
        return journal.since(0).stream().filter(e -> e.requestId().equals(p.id) && e.event().equals(event))
                .map(JournalEntry::detail).findFirst().orElseThrow(() -> new AssertionError(p.journal()));
    }

    @Test
    void aCancelDecodeAppliedReachesPrefillThroughItsRegistryAsUpstream() {
        Prompt p = new Prompt(40);
        runUntil("the first chunk", () -> p.journal().contains("CHUNK"));
        p.receive.abort(CancelReason.DEADLINE, CancelSource.KAFKA); // decode heard it; prefill did not
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(p.job.cancelRequest().reason()).isEqualTo(CancelReason.DEADLINE);
        assertThat(p.job.cancelRequest().source()).isEqualTo(CancelSource.UPSTREAM);
        assertThat(registry.isCancelled(p.id)).as("the registration reports the cancel").isTrue();
        assertThat(p.allEvents()).last().isEqualTo(new Cancelled(CancelReason.DEADLINE, CancelSource.UPSTREAM));
        assertThat(scheduler.aborts()).isEqualTo(1);
    }

    @Test
    void aSendThatThrowsFailsTheJobInsteadOfLeavingItComputing() {
        Prompt p = new Prompt(40, 1); // the second chunk's page lies outside the receiver's one page: sendBatch throws
        runUntil("the job to end", () -> p.job.state().isTerminal());
        scheduler.engineLoop().runUntilIdle(10_000);

        assertThat(p.job.state()).isEqualTo(JobState.FAILED);
        assertThat(p.allEvents()).last().isInstanceOfSatisfying(Failed.class,
                f -> assertThat(f.code()).isEqualTo(Failed.ENGINE_FAILED));
        assertThat(p.receive.completion()).failsWithin(HANG_GUARD);
        runUntil("freed", () -> p.journal().contains("FREED"));
        assertThat(p.journal()).containsExactly("QUEUED", "STARTED", "CHUNK", "CHUNK", "FAILED", "FREED");
    }

    @Test
    void aTransferFailureThatIsNotACancelEndsFailedWithoutAnAbort() {
        Prompt p = new Prompt(40);
        runUntil("the first chunk", () -> p.journal().contains("CHUNK"));
        p.receive.abort("decode ran out of patience"); // not a cancel: untyped
        runUntil("ended", () -> p.job.state().isTerminal());
        runUntil("freed", () -> p.journal().contains("FREED"));
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(p.job.state()).isEqualTo(JobState.FAILED);
        assertThat(p.allEvents()).last().isInstanceOfSatisfying(Failed.class,
                f -> assertThat(f.code()).isEqualTo(Failed.TRANSFER_FAILED));
        assertThat(p.journal()).doesNotContain("CANCEL_OBSERVED");
        assertThat(scheduler.aborts()).isZero();
        assertThat(registry.isCancelled(p.id)).isFalse();
    }

    @Test
    void aCancelThatArrivedFirstEndsTheJobAtAdmission() {
        String id = "prefill-test-tomb-" + (++counter);
        registry.cancel(id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA);
        long pageBytes = engine.pagePool().pageBytes();
        ReceiveSession receive = decodeSide.openReceive(id, landing, List.of(new ByteRange(0, pageBytes)));
        PrefillJob job = scheduler.submit(new PrefillRequest(id, new int[] {1, 2, 3}, new Sampling(0, 1, 5),
                receive.descriptor().encode()));
        List<PrefillEvent> events = Collections.synchronizedList(new ArrayList<>());
        job.events().subscribe(events::add);
        runUntil("ended", () -> job.state().isTerminal());
        scheduler.engineLoop().runUntilIdle(10_000);
        assertThat(job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(events).containsExactly(new Cancelled(CancelReason.CLIENT_DISCONNECT, CancelSource.TOMBSTONE));
        assertThat(journal.since(0).stream().filter(e -> e.requestId().equals(id)).map(JournalEntry::event))
                .containsExactly("CANCEL_OBSERVED", "CANCELLED_AT_ADMISSION");
        receive.abort("the gateway never got to use it"); // nothing attached to it
    }

    /** The bench-only {@code chunk-after-cancel}, armed: a cancel that arrived first still lets one chunk compute. */
    @Test
    void armedChunkAfterCancelComputesOneChunkOfAPromptWhoseCancelArrivedFirst() {
        Sabotage.arm("chunk-after-cancel", "1");
        try {
            String id = "prefill-test-tomb-" + (++counter);
            registry.cancel(id, CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA);
            long pageBytes = engine.pagePool().pageBytes();
            ReceiveSession receive = decodeSide.openReceive(id, landing, List.of(new ByteRange(0, pageBytes)));
            PrefillJob job = scheduler.submit(new PrefillRequest(id, new int[] {1, 2, 3}, new Sampling(0, 1, 5),
                    receive.descriptor().encode()));
            runUntil("freed", () -> journal.since(0).stream()
                    .anyMatch(e -> e.requestId().equals(id) && e.event().equals("FREED")));
            scheduler.engineLoop().runUntilIdle(10_000);

            List<String> events = journal.since(0).stream().filter(e -> e.requestId().equals(id))
                    .map(JournalEntry::event).toList();
            assertThat(events).startsWith("CANCEL_OBSERVED", "QUEUED", "STARTED", "CHUNK");
            assertThat(events).doesNotContain("CANCELLED_AT_ADMISSION");
            assertThat(job.state().isTerminal()).isTrue();
        } finally {
            Sabotage.disarm();
        }
    }
}
