package dev.ripcord.worker;

import dev.ripcord.protocol.Pairing;
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
 * The {@link Pairing} is what a peer worker must share with this one to exchange KV: the served model's identity
 * and the engine's numeric definition. Owned by the Spring context (or a test), never by the scheduler.
 */
public record WorkerContext(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                            CancellationRegistry registry, MeterRegistry meters, SchedulerJournal journal,
                            EngineLoop.Mode loopMode, LifecyclePublisher lifecycle, Pairing pairing) {

    /** Model identity of a context built without one (tests): such contexts pair with each other only. */
    public static final String UNIDENTIFIED_MODEL = "unidentified";

    /** A context whose model is {@link #UNIDENTIFIED_MODEL} (in-process tests). */
    public WorkerContext(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                         CancellationRegistry registry, MeterRegistry meters, SchedulerJournal journal,
                         EngineLoop.Mode loopMode, LifecyclePublisher lifecycle) {
        this(engine, agent, poolRegion, registry, meters, journal, loopMode, lifecycle,
                new Pairing(UNIDENTIFIED_MODEL, engine == null ? UNIDENTIFIED_MODEL : engine.numerics()));
    }

    /** A context whose lifecycle log is off (tests that do not look at it). */
    public WorkerContext(InferenceEngine engine, TransferAgent agent, KvRegion poolRegion,
                         CancellationRegistry registry, MeterRegistry meters, SchedulerJournal journal,
                         EngineLoop.Mode loopMode) {
        this(engine, agent, poolRegion, registry, meters, journal, loopMode, LifecyclePublisher.disabled());
    }
}
