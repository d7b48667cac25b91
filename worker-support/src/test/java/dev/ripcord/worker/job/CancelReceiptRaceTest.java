package dev.ripcord.worker.job;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.lifecycle.audit.AuditReport;
import dev.ripcord.lifecycle.audit.Auditor;
import dev.ripcord.lifecycle.audit.Invariant;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * A job that ends just as its cancel arrives never passes for a cancel received and ignored: whichever of the
 * job's own end and the cancel wins, the lifecycle log shows CANCEL_OBSERVED after every CANCEL_RECEIVED that found
 * the job not yet ended, so the audit's {@code CANCEL_RECEIVED_THEN_OBSERVED} finds nothing. Hammered: the cancel and
 * the end race on two threads, with the cancel's start shifted by a few spins each time.
 */
class CancelReceiptRaceTest {

    private static final class Job extends WorkerJob<Object> {
        Job(String requestId) {
            super(requestId);
        }
    }

    @Test
    void aJobEndingAsItsCancelArrivesIsNeverACancelReceivedAndIgnored() throws Exception {
        int jobs = 1_000;
        List<LifecycleEvent> events = new CopyOnWriteArrayList<>();
        LifecyclePublisher lifecycleLog = new LifecyclePublisher("decode", "decode-1", 4 * jobs + 100, events::add,
                Clock.systemUTC());
        ExecutorService canceller = Executors.newSingleThreadExecutor();
        try (InferenceEngine engine = InferenceEngine.create(Preset.TINY, 1,
                EngineOptions.defaults().withThreads(1).withPageTokens(16).withKvPages(8))) {
            CancellationRegistry registry = new CancellationRegistry();
            JobLifecycle<Job, Object> lifecycle = new JobLifecycle<>("decode", new WorkerContext(engine, null, null,
                    registry, new SimpleMeterRegistry(), new SchedulerJournal(64), EngineLoop.Mode.MANUAL,
                    lifecycleLog), () -> false, (Cancelled c) -> c, (Failed f) -> f);
            for (int i = 0; i < jobs; i++) {
                Job job = new Job("race-" + i);
                lifecycle.register(job, (j, cancel) ->
                        lifecycle.cancel(j, JobState.RUNNING, "decode", "STOPPED", cancel.reason()));
                assertThat(job.moveTo(JobState.WAITING, JobState.RUNNING)).isTrue();
                CountDownLatch go = new CountDownLatch(1);
                int spins = i % 200;
                Future<?> cancel = canceller.submit(() -> {
                    go.await();
                    for (int k = 0; k < spins; k++) {
                        Thread.onSpinWait();
                    }
                    registry.cancel(job.requestId(), CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
                    return null;
                });
                go.countDown();
                lifecycle.finish(job, JobState.RUNNING, null, "DONE", "");
                cancel.get();
                lifecycle.loop().runUntilIdle(100);
            }
            lifecycle.loop().close();
        } finally {
            canceller.shutdownNow();
            lifecycleLog.close(Duration.ofSeconds(10));
        }

        long received = events.stream().filter(e -> e.type() == LifecycleEventType.CANCEL_RECEIVED).count();
        AuditReport report = Auditor.audit(events, List.of(), new Auditor.Options(null, null, Duration.ZERO));
        assertThat(report.losses()).as("the log lost nothing: every finding would be a verdict").isEmpty();
        assertThat(report.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).isEmpty();
        assertThat(report.unverifiable()).filteredOn(v -> v.invariant() == Invariant.CANCEL_RECEIVED_THEN_OBSERVED)
                .isEmpty();
        assertThat(received).as("cancels that found the job still registered, ended or not").isPositive();
    }
}
