package dev.ripcord.worker.job;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A job's free that throws is not forgotten: the job stays unfreed and the free is tried again. */
class FreeRetryTest {

    private static final class Job extends WorkerJob<Object> {
        Job(String requestId, JobLifecycle<Job, Object> lifecycle) {
            super(requestId);
            events.emitOn(lifecycle.loop()); // what register does; these jobs end by refusal, never registered
        }
    }

    @Test
    void aFreeThatThrowsIsRetriedWhenTheNextJobFrees() {
        try (InferenceEngine engine = InferenceEngine.create(Preset.TINY, 1,
                EngineOptions.defaults().withThreads(1).withPageTokens(16).withKvPages(8))) {
            SchedulerJournal journal = new SchedulerJournal(64);
            JobLifecycle<Job, Object> lifecycle = new JobLifecycle<>("test", new WorkerContext(engine, null, null,
                    new CancellationRegistry(), new SimpleMeterRegistry(), journal, EngineLoop.Mode.MANUAL),
                    () -> false, (Cancelled c) -> c, (Failed f) -> f);
            AtomicBoolean refusing = new AtomicBoolean(true);
            AtomicInteger attempts = new AtomicInteger();
            Job first = new Job("first", lifecycle);
            lifecycle.freeWhenReleased(first, CompletableFuture.completedFuture(null), () -> {
                attempts.incrementAndGet();
                if (refusing.get()) {
                    throw new IllegalStateException("the pool refused");
                }
            });
            lifecycle.refuse(first);
            lifecycle.loop().runUntilIdle(100);

            assertThat(attempts).hasPositiveValue();
            assertThat(first.isFreed()).as("a free that threw freed nothing").isFalse();
            assertThat(lifecycle.freesPending()).isEqualTo(1);

            refusing.set(false);
            int before = attempts.get();
            Job second = new Job("second", lifecycle);
            lifecycle.freeWhenReleased(second, CompletableFuture.completedFuture(null), () -> { });
            lifecycle.refuse(second);
            lifecycle.loop().runUntilIdle(100);

            assertThat(attempts).hasValue(before + 1);
            assertThat(first.isFreed()).isTrue();
            assertThat(second.isFreed()).isTrue();
            assertThat(lifecycle.freesPending()).isZero();
            assertThat(journal.since(0).stream().filter(e -> e.event().equals("FREED")).map(JournalEntry::requestId))
                    .containsExactly("second", "first");
            lifecycle.loop().close();
        }
    }
}
