package dev.ripcord.worker;

import dev.ripcord.lifecycle.LifecyclePublisher;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * What a worker's scheduler works with, the same in both workers: the engine, the transfer agent and the region
 * that names the engine's page pool, the cancellation registry, the meters, the journal, and how its engine loop
 * runs ({@link EngineLoop.Mode#THREAD} in a service; in-process tests step a {@link EngineLoop.Mode#MANUAL} one), and
 * the lifecycle log's publisher (the scheduler's events reach it through {@code JobLifecycle}, in journal order).
 * Owned by the Spring context (or a test), never by the scheduler.
 */
public record WorkerContext(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                            CancellationRegistry registry, MeterRegistry meters, SchedulerJournal journal,
                            EngineLoop.Mode loopMode, LifecyclePublisher lifecycle) {

    /** A context whose lifecycle log is off (tests that do not look at it). */
    public WorkerContext(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                         CancellationRegistry registry, MeterRegistry meters, SchedulerJournal journal,
                         EngineLoop.Mode loopMode) {
        this(engine, agent, poolRegion, registry, meters, journal, loopMode, LifecyclePublisher.disabled());
    }
}
