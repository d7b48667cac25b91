package dev.ripcord.prefill.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveListener;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.AgentPoolMemory;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.JobState;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * How prefill posts a chunk's pages: one batch per chunk, acknowledged once, covering exactly the pages
 * that chunk finished, on both backends. Pages of 16 tokens and chunks of 64 tokens, so a chunk finishes 4 pages.
 */
@ExtendWith(KvLeakCheck.class)
class PrefillKvBatchTest {

    private static final int PAGE_TOKENS = 16;
    private static final int CHUNK = 64;
    private static final Duration HANG_GUARD = Duration.ofSeconds(20);

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void eachChunkPostsItsFinishedPagesAsOneBatchAcknowledgedOnce(Backend backend) {
        TransferAgent prefillAgent = TransferAgent.start(TransferAgentOptions.defaults("prefill-batch")
                .withBackend(backend));
        TransferAgent decodeAgent = TransferAgent.start(TransferAgentOptions.defaults("decode-batch")
                .withBackend(backend));
        AgentPoolMemory poolMemory = new AgentPoolMemory(prefillAgent);
        InferenceEngine engine = InferenceEngine.create(Preset.TINY, 3, EngineOptions.defaults().withThreads(1)
                .withPageTokens(PAGE_TOKENS).withKvPages(64).withMaxChunkTokens(CHUNK).withKvPoolMemory(poolMemory));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        PrefillScheduler scheduler = new PrefillScheduler(new WorkerContext(engine, prefillAgent,
                poolMemory.region(), new CancellationRegistry(), meters, new SchedulerJournal(256),
                EngineLoop.Mode.MANUAL), new PrefillProperties(CHUNK, 1, 8, Duration.ofSeconds(1)));
        long pageBytes = engine.pagePool().pageBytes();
        int tokens = 150; // chunks of 64, 64, 22: pages 0-3, 4-7, then 8-9 (the last one partial)
        int pages = (tokens + PAGE_TOKENS - 1) / PAGE_TOKENS;
        KvRegion landing = decodeAgent.allocateRegion(pageBytes * pages * 2);
        try {
            // decode's pages scattered in its pool (every other page), as its allocator may hand them out
            List<ByteRange> targets = IntStream.range(0, pages)
                    .mapToObj(p -> new ByteRange(2L * p * pageBytes, pageBytes)).toList();
            List<String> landed = new CopyOnWriteArrayList<>();
            ReceiveSession receive = decodeAgent.openReceive("batch-" + backend, landing, targets,
                    new ReceiveListener() {
                        @Override
                        public void onChunkLanded(ReceiveSession session, long dstOffset, long length) {
                            landed.add(dstOffset / pageBytes + "+" + length / pageBytes);
                        }
                    });
            int[] prompt = IntStream.range(0, tokens).map(i -> 'a' + i % 26).toArray();
            PrefillJob job = scheduler.submit(new PrefillRequest(receive.descriptor().requestId(), prompt,
                    new Sampling(0, 1, 5), receive.descriptor().encode()));
            runUntil(scheduler, () -> job.state().isTerminal() && receive.released().isDone()
                    && engine.pagePool().pagesLive() == 0 && prefillAgent.stats().liveSessions() == 0);
            scheduler.engineLoop().runUntilIdle(10_000);

            assertThat(job.state()).isEqualTo(JobState.DONE);
            assertThat(job.send.backend()).isEqualTo(backend);
            assertThat(landed).as("one write per chunk: its pages, in order, once (in pages: first+count)")
                    .containsExactly("0+4", "4+4", "8+2");
            assertThat(job.sends).hasSize(3);
            assertThat(receive.bytesReceived()).isEqualTo(pages * pageBytes);
            assertThat(meters.get("ripcord.prefill.kv.send.time").timer().count()).as("one burst per chunk")
                    .isEqualTo(3);
            assertThat(meters.get("ripcord.prefill.kv.send.bytes").summary().totalAmount())
                    .isEqualTo(pages * pageBytes);
        } finally {
            scheduler.close();
            scheduler.engineLoop().runUntilIdle(10_000);
            engine.close();
            poolMemory.close();
            landing.close();
            decodeAgent.close();
            prefillAgent.close();
        }
    }

    private static void runUntil(PrefillScheduler scheduler, BooleanSupplier done) {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (!scheduler.engineLoop().runOnce()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("hung waiting for the prefill to end");
                }
                Thread.yield();
            }
        }
    }
}
