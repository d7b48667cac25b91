package dev.ripcord.worker.job;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Sabotage;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.lifecycle.audit.AuditReport;
import dev.ripcord.lifecycle.audit.Auditor;
import dev.ripcord.lifecycle.audit.Invariant;
import dev.ripcord.lifecycle.audit.Violation;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The bench-only {@code drop-cancel} sabotage: armed, a decode worker's first cancel of a live job, whatever its
 * source, goes nowhere, and the job is left to end on its own; every other cancel is observed as ever. Not armed, or
 * in another service, nothing is dropped.
 */
class DropCancelSabotageTest {

    private static final class Job extends WorkerJob<Object> {
        Job(String requestId) {
            super(requestId);
        }
    }

    @AfterEach
    void disarm() {
        Sabotage.disarm();
    }

    @Test
    void armedTheDecodeWorkersFirstCancelOfALiveJobIsDroppedAndOnlyThatOne() {
        Sabotage.arm("drop-cancel", "1");
        List<String> observed = runTwoCancelledJobs("decode");

        assertThat(observed).as("the first job's cancel was dropped, in band and from Kafka alike (delivered once)")
                .containsExactly("second");
    }

    /**
     * The lifecycle log's evidence of the sabotage: the dropped cancel was received (CANCEL_RECEIVED, the job
     * WAITING) and never observed, and the audit's {@code CANCEL_RECEIVED_THEN_OBSERVED} names that job; not armed,
     * every received cancel is observed after its receipt and the invariant holds.
     */
    @Test
    void armedTheDroppedCancelIsReceivedNeverObservedAndTheAuditCatchesIt() {
        Sabotage.arm("drop-cancel", "1");
        List<LifecycleEvent> events = new CopyOnWriteArrayList<>();
        runTwoCancelledJobs("decode", events);

        assertThat(events).filteredOn(e -> "first".equals(e.requestId())).extracting(LifecycleEvent::type)
                .contains(LifecycleEventType.CANCEL_RECEIVED, LifecycleEventType.JOB_FINISHED)
                .doesNotContain(LifecycleEventType.CANCEL_OBSERVED);
        AuditReport report = Auditor.audit(events, List.of(), new Auditor.Options(null, null, Duration.ZERO));
        assertThat(report.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).extracting(Violation::requestId)
                .containsExactly("first");
    }

    @Test
    void notArmedEveryReceivedCancelIsObservedAfterItsReceipt() {
        List<LifecycleEvent> events = new CopyOnWriteArrayList<>();
        runTwoCancelledJobs("decode", events);

        for (String id : List.of("first", "second")) {
            assertThat(events).filteredOn(e -> id.equals(e.requestId())).extracting(LifecycleEvent::type).as(id)
                    .containsSubsequence(LifecycleEventType.CANCEL_RECEIVED, LifecycleEventType.CANCEL_OBSERVED,
                            LifecycleEventType.ABORTED);
            assertThat(events).filteredOn(e -> id.equals(e.requestId())
                    && e.type() == LifecycleEventType.CANCEL_RECEIVED).singleElement()
                    .satisfies(e -> assertThat(e.detail()).isEqualTo("WAITING"));
        }
        AuditReport report = Auditor.audit(events, List.of(), new Auditor.Options(null, null, Duration.ZERO));
        assertThat(report.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).isEmpty();
    }

    @Test
    void notArmedEveryCancelIsObserved() {
        assertThat(runTwoCancelledJobs("decode")).containsExactly("first", "second");
    }

    @Test
    void armedInAPrefillWorkerNothingIsDropped() {
        Sabotage.arm("drop-cancel", "1");

        assertThat(runTwoCancelledJobs("prefill")).containsExactly("first", "second");
    }

    /**
     * Registers two jobs, cancels the first from Kafka and then in band, the second from Kafka, and ends each: by
     * its cancel if it observed one, else on its own. Returns the jobs whose cancel was observed, as the journal's
     * {@code CANCEL_OBSERVED} entries say, checked against the handler's calls and the jobs' ends.
     */
    private static List<String> runTwoCancelledJobs(String service) {
        return runTwoCancelledJobs(service, null);
    }

    /** As above, publishing the lifecycle log into {@code events} (when not null), flushed before this returns. */
    private static List<String> runTwoCancelledJobs(String service, List<LifecycleEvent> events) {
        LifecyclePublisher lifecycleLog = events == null ? LifecyclePublisher.disabled()
                : new LifecyclePublisher(service, service + "-1", 100, events::add, Clock.systemUTC());
        try (InferenceEngine engine = InferenceEngine.create(Preset.TINY, 1,
                EngineOptions.defaults().withThreads(1).withPageTokens(16).withKvPages(8))) {
            SchedulerJournal journal = new SchedulerJournal(64);
            CancellationRegistry registry = new CancellationRegistry();
            JobLifecycle<Job, Object> lifecycle = new JobLifecycle<>(service, new WorkerContext(engine, null, null,
                    registry, new SimpleMeterRegistry(), journal, EngineLoop.Mode.MANUAL, lifecycleLog),
                    () -> false, (Cancelled c) -> c, (Failed f) -> f);
            List<String> handled = new CopyOnWriteArrayList<>();
            Job first = new Job("first");
            Job second = new Job("second");
            for (Job job : List.of(first, second)) {
                lifecycle.register(job, (j, cancel) -> {
                    handled.add(j.requestId());
                    lifecycle.cancel(j, JobState.WAITING, "queued", "REMOVED_FROM_QUEUE", cancel.reason());
                });
            }

            registry.cancel("first", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            registry.cancel("first", CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
            registry.cancel("second", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            for (Job job : List.of(first, second)) {
                if (!job.isCancelRequested()) {
                    assertThat(job.moveTo(JobState.WAITING, JobState.RUNNING)).isTrue(); // it decodes on
                    assertThat(lifecycle.finish(job, JobState.RUNNING, null, "DONE", "")).as(job.requestId())
                            .isTrue();
                }
            }
            lifecycle.loop().runUntilIdle(100);

            List<String> observed = journal.since(0).stream().filter(e -> e.event().equals("CANCEL_OBSERVED"))
                    .map(JournalEntry::requestId).toList();
            assertThat(handled).isEqualTo(observed);
            assertThat(first.state()).isEqualTo(observed.contains("first") ? JobState.CANCELLED : JobState.DONE);
            assertThat(second.state()).isEqualTo(JobState.CANCELLED);
            assertThat(lifecycle.aborts()).isEqualTo(observed.size());
            assertThat(registry.liveRegistrations()).isZero();
            lifecycle.loop().close();
            if (events != null) {
                lifecycleLog.close(Duration.ofSeconds(10));
            }
            return observed;
        }
    }
}
