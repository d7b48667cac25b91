package dev.ripcord.decode.scheduler;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.AgentPoolMemory;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.SessionLifecycle;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * A prefill worker and a decode worker in one JVM, wired as in production but without HTTP: two tiny engines, two
 * transfer agents talking over loopback TCP (or, when asked, shared memory), two registries and journals, and two engine loops that the test steps
 * itself ({@link EngineLoop#manual}). What crosses the network (KV pages, the transfer's abort) really crosses it;
 * everything the gateway does is the test's business: it carries the RESERVED descriptor from decode to prefill
 * and delivers cancels to each worker's registry the way the chosen propagation mode would.
 */
final class TwoWorkers implements AutoCloseable {

    static final int PAGE_TOKENS = 16;
    static final int CHUNK_TOKENS = 16;
    /** The tiny preset's context, and the pages one takes. */
    static final int CONTEXT_TOKENS = Preset.TINY.config().contextLength();
    static final int CONTEXT_PAGES = CONTEXT_TOKENS / PAGE_TOKENS;
    /** Pages in each worker's pool: sixteen full contexts. */
    static final int DECODE_POOL_PAGES = 512;
    /**
     * Decode's batch, and so the requests it admits at a time: more than the pool's contexts, so that pages, not
     * slots, are what a test that fills the pool runs out of.
     */
    static final int MAX_BATCH = 32;
    /** Bounds every wait for the network; only a hang ever reaches it. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(20);

    final InferenceEngine prefillEngine;
    final InferenceEngine decodeEngine;
    final TransferAgent prefillAgent;
    final TransferAgent decodeAgent;
    final AgentPoolMemory prefillPoolMemory;
    final AgentPoolMemory decodePoolMemory;
    final KvRegion prefillRegion;
    final KvRegion decodeRegion;
    final CancellationRegistry prefillRegistry = new CancellationRegistry();
    final CancellationRegistry decodeRegistry = new CancellationRegistry();
    final SchedulerJournal prefillJournal = new SchedulerJournal(1 << 16);
    final SchedulerJournal decodeJournal = new SchedulerJournal(1 << 16);
    final SimpleMeterRegistry prefillMeters = new SimpleMeterRegistry();
    final SimpleMeterRegistry decodeMeters = new SimpleMeterRegistry();
    final PrefillScheduler prefill;
    final DecodeScheduler decode;
    /** Both workers' lifecycle logs, as the Kafka sink would receive them (see {@link #lifecycleEvents()}). */
    private final List<LifecycleEvent> lifecycle = Collections.synchronizedList(new ArrayList<>());
    private final LifecyclePublisher prefillLog = new LifecyclePublisher("prefill", "prefill-test", 1 << 20,
            lifecycle::add, Clock.systemUTC());
    private final LifecyclePublisher decodeLog = new LifecyclePublisher("decode", "decode-test", 1 << 20,
            lifecycle::add, Clock.systemUTC());

    TwoWorkers() {
        this(1);
    }

    /** @param maxRunning prompts prefill interleaves chunk by chunk */
    TwoWorkers(int maxRunning) {
        this(maxRunning, Backend.TCP, Backend.TCP);
    }

    /**
     * Workers whose agents run {@code prefillBackend} and {@code decodeBackend}. As in a service, each engine's page
     * pool lives in a region its agent allocated ({@link AgentPoolMemory}): a shared-memory file unless the agent is
     * TCP-only, so a same-host SHM or AUTO sender copies straight into decode's pages.
     *
     * @param maxRunning prompts prefill interleaves chunk by chunk
     */
    TwoWorkers(int maxRunning, Backend prefillBackend, Backend decodeBackend) {
        this(maxRunning, prefillBackend, decodeBackend, new DecodeProperties.Admission(256, Duration.ofSeconds(20)));
    }

    /** Workers as above, decode's admission queue configured by {@code admission}. */
    TwoWorkers(int maxRunning, Backend prefillBackend, Backend decodeBackend, DecodeProperties.Admission admission) {
        this(maxRunning, prefillBackend, decodeBackend, admission, MAX_BATCH);
    }

    /**
     * Workers as above, decode batching at most {@code maxBatch} sequences (and so admitting at most that many
     * requests at a time).
     */
    TwoWorkers(int maxRunning, Backend prefillBackend, Backend decodeBackend, DecodeProperties.Admission admission,
               int maxBatch) {
        EngineOptions options = EngineOptions.defaults().withThreads(1).withPageTokens(PAGE_TOKENS).withKvPages(DECODE_POOL_PAGES)
                .withMaxChunkTokens(CHUNK_TOKENS).withMaxBatch(maxBatch);
        prefillAgent = TransferAgent.start(TransferAgentOptions.defaults("prefill-test").withBackend(prefillBackend)
                .withMeterRegistry(prefillMeters));
        decodeAgent = TransferAgent.start(TransferAgentOptions.defaults("decode-test").withBackend(decodeBackend)
                .withMeterRegistry(decodeMeters));
        prefillPoolMemory = new AgentPoolMemory(prefillAgent);
        decodePoolMemory = new AgentPoolMemory(decodeAgent);
        prefillEngine = InferenceEngine.create(Preset.TINY, 7, options.withKvPoolMemory(prefillPoolMemory));
        decodeEngine = InferenceEngine.create(Preset.TINY, 7, options.withKvPoolMemory(decodePoolMemory));
        prefillRegion = prefillPoolMemory.region();
        decodeRegion = decodePoolMemory.region();
        prefillAgent.onSession(new SessionLifecycle(prefillLog));
        decodeAgent.onSession(new SessionLifecycle(decodeLog));
        prefill = new PrefillScheduler(new WorkerContext(prefillEngine, prefillAgent, prefillRegion, prefillRegistry,
                prefillMeters, prefillJournal, EngineLoop.Mode.MANUAL, prefillLog),
                new PrefillProperties(CHUNK_TOKENS, maxRunning, 256, Duration.ofSeconds(1)));
        decode = new DecodeScheduler(new WorkerContext(decodeEngine, decodeAgent, decodeRegion, decodeRegistry,
                decodeMeters, decodeJournal, EngineLoop.Mode.MANUAL, decodeLog),
                new DecodeProperties(maxBatch, Duration.ofSeconds(1), admission));
    }

    /** One request's two legs, as the gateway would hold them. */
    final class Request {
        final String id;
        final int promptTokens;
        final DecodeJob decodeJob;
        final List<DecodeEvent> decodeEvents = Collections.synchronizedList(new ArrayList<>());
        PrefillJob prefillJob;
        final List<PrefillEvent> prefillEvents = Collections.synchronizedList(new ArrayList<>());
        volatile boolean decodeEnded;
        volatile boolean prefillEnded;

        Request(String id, int promptTokens, DecodeJob decodeJob) {
            this.id = id;
            this.promptTokens = promptTokens;
            this.decodeJob = decodeJob;
            decodeJob.events().subscribe(decodeEvents::add, e -> decodeEnded = true, () -> decodeEnded = true);
        }

        String transfer() {
            return decodeEvents.isEmpty() || !(decodeEvents.getFirst() instanceof DecodeEvent.Reserved r)
                    ? null : r.transfer();
        }

        /** The prefill leg: submitted with decode's descriptor, as the gateway does after RESERVED. */
        PrefillJob startPrefill() {
            int[] tokens = IntStream.range(0, promptTokens).map(i -> 'a' + i % 26).toArray();
            prefillJob = prefill.submit(new PrefillRequest(id, tokens, new Sampling(0, 1, 42), transfer()));
            prefillJob.events().subscribe(prefillEvents::add, e -> prefillEnded = true, () -> prefillEnded = true);
            return prefillJob;
        }
    }

    /** Admits {@code id} at decode (steps decode's loop until RESERVED is out). */
    Request reserve(String id, int promptTokens, int maxTokens) {
        CompletableFuture<DecodeJob> admitted = decode.submit(new DecodeRequest(id, promptTokens, maxTokens,
                new Sampling(0, 1, 42), true));
        decodeLoop().runUntilIdle(1000);
        Request request = new Request(id, promptTokens, admitted.join());
        decodeLoop().runUntilIdle(1000);
        return request;
    }

    EngineLoop prefillLoop() {
        return prefill.engineLoop();
    }

    EngineLoop decodeLoop() {
        return decode.engineLoop();
    }

    /** One round on each loop; returns whether either did anything. */
    boolean stepBoth() {
        boolean worked = prefillLoop().runOnce();
        return decodeLoop().runOnce() | worked;
    }

    /**
     * Steps both loops until {@code done} holds, waiting (not asserting on time) for what the network has yet to
     * deliver; fails only on a hang.
     */
    void runUntil(String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (!stepBoth()) {
                pause(what, deadline);
            }
        }
    }

    /** Steps prefill's loop only (decode's stays where it is) until {@code done}; fails only on a hang. */
    void stepPrefillUntil(String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (!prefillLoop().runOnce()) {
                pause(what, deadline);
            }
        }
    }

    /** Steps no loop: waits for the network alone; fails only on a hang. */
    void waitFor(String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + HANG_GUARD.toNanos();
        while (!done.getAsBoolean()) {
            pause(what, deadline);
        }
    }

    private void pause(String what, long deadline) {
        if (System.nanoTime() > deadline) {
            throw new AssertionError("hung waiting for " + what + "\nprefill journal: " + prefillJournal.since(0)
                    + "\ndecode journal: " + decodeJournal.since(0));
        }
        Thread.yield(); // the transfer agents' event loops need the core more than this thread does
    }

    /** Until both workers hold nothing: no pages, sessions, regions beyond the pools', or registrations. */
    void runUntilQuiet() {
        runUntil("both workers to let go of everything", () -> prefillEngine.pagePool().pagesLive() == 0
                && decodeEngine.pagePool().pagesLive() == 0
                && prefillAgent.stats().liveSessions() == 0 && decodeAgent.stats().liveSessions() == 0
                && prefillRegistry.liveRegistrations() == 0 && decodeRegistry.liveRegistrations() == 0
                && prefill.queued() + prefill.running() == 0
                && decode.awaitingKv() + decode.running() + decode.queuedForPages() == 0);
        // What the loops still hold queued (the last emissions of ended streams) runs too.
        prefillLoop().runUntilIdle(100_000);
        decodeLoop().runUntilIdle(100_000);
    }

    List<String> prefillEvents(String id) {
        return events(prefillJournal, id);
    }

    List<String> decodeEvents(String id) {
        return events(decodeJournal, id);
    }

    static List<String> events(SchedulerJournal journal, String id) {
        return journal.since(0).stream().filter(e -> e.requestId().equals(id)).map(JournalEntry::event).toList();
    }

    static List<JournalEntry> entries(SchedulerJournal journal, String id) {
        return journal.since(0).stream().filter(e -> e.requestId().equals(id)).toList();
    }

    /**
     * Everything both workers published on their lifecycle logs so far: the publishers are closed first (they
     * deliver what is queued), so call it once, when the workers are done.
     */
    List<LifecycleEvent> lifecycleEvents() {
        prefillLog.close(HANG_GUARD);
        decodeLog.close(HANG_GUARD);
        assertNoDrops();
        return List.copyOf(lifecycle);
    }

    private void assertNoDrops() {
        if (prefillLog.dropped() + decodeLog.dropped() > 0) {
            throw new AssertionError("the lifecycle publishers dropped events: " + prefillLog.dropped() + " + "
                    + decodeLog.dropped());
        }
    }

    @Override
    public void close() {
        // A service's order: schedulers, engines, the pool regions (freed once drained), then the agents.
        prefill.close();
        decode.close();
        prefillEngine.close();
        decodeEngine.close();
        prefillPoolMemory.close();
        decodePoolMemory.close();
        prefillAgent.close();
        decodeAgent.close();
        prefillLog.close(HANG_GUARD);
        decodeLog.close(HANG_GUARD);
    }
}
