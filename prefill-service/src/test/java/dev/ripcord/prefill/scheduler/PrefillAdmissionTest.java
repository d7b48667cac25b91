package dev.ripcord.prefill.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.testing.CancellationLeakExtension;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.Preset;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.JobState;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The prefill scheduler's admission in process, with a tiny engine stepped by the test and a clock the test moves:
 * a short prompt behind a long one, the maximum wait and its {@code Retry-After} estimate, and prompts that wait for
 * KV pages. The clock advances one millisecond per layer the engine enters, so "time" is a count of layers.
 */
@ExtendWith(KvLeakCheck.class)
class PrefillAdmissionTest {

    private static final int CHUNK = 16;
    private static final long MS = 1_000_000;
    private static final long SECOND = 1_000_000_000;
    private static final Duration HANG_GUARD = Duration.ofSeconds(20);

    private static InferenceEngine engine;
    private static TransferAgent agent;
    private static TransferAgent decodeSide;
    private static KvRegion poolRegion;
    private static KvRegion landing;
    private static int counter;

    private final AtomicLong clock = new AtomicLong();
    private final CancellationRegistry registry = new CancellationRegistry();
    private final SchedulerJournal journal = new SchedulerJournal(4096);
    private PrefillScheduler scheduler;

    @RegisterExtension
    final CancellationLeakExtension leaks = CancellationLeakExtension.afterEachTest(() -> registry);

    @BeforeAll
    static void start() {
        engine = InferenceEngine.create(Preset.TINY, 3, EngineOptions.defaults().withThreads(1).withPageTokens(16)
                .withKvPages(32).withMaxChunkTokens(CHUNK));
        agent = TransferAgent.start(TransferAgentOptions.defaults("prefill-under-test").withBackend(Backend.TCP));
        decodeSide = TransferAgent.start(TransferAgentOptions.defaults("decode-stand-in").withBackend(Backend.TCP));
        poolRegion = agent.registerRegion(engine.pagePool().segment());
        landing = decodeSide.allocateRegion(engine.pagePool().pageBytes() * 32);
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
        runUntil("pages back", () -> engine.pagePool().pagesLive() == 0 && agent.stats().liveSessions() == 0
                && decodeSide.stats().liveSessions() == 0);
        scheduler.engineLoop().runUntilIdle(10_000);
        scheduler.close();
        engine.onLayerBoundary(null);
    }

    /** A scheduler whose clock advances {@code tick} nanoseconds at every layer boundary the engine reaches. */
    private void startScheduler(PrefillProperties properties, long tick) {
        scheduler = new PrefillScheduler(new WorkerContext(engine, agent, poolRegion, registry,
                new SimpleMeterRegistry(), journal, EngineLoop.Mode.MANUAL), properties, clock::get);
        engine.onLayerBoundary(layer -> clock.addAndGet(tick));
    }

    private final class Prompt {
        final String id = "admission-test-" + (++counter);
        final ReceiveSession receive;
        final PrefillJob job;
        final List<PrefillEvent> events = Collections.synchronizedList(new ArrayList<>());

        Prompt(int tokens) {
            long pageBytes = engine.pagePool().pageBytes();
            List<ByteRange> targets = IntStream.range(0, (tokens + 15) / 16)
                    .mapToObj(p -> new ByteRange(p * pageBytes, pageBytes)).toList();
            receive = decodeSide.openReceive(id, landing, targets);
            // Each prompt its own text, so no prompt starts from another's pages in the prefix cache: the chunk
            // counts below are the scheduler's, not the cache's.
            int shift = counter * 7;
            int[] prompt = IntStream.range(0, tokens).map(i -> 'a' + (i + shift) % 26).toArray();
            job = scheduler.submit(new PrefillRequest(id, prompt, new Sampling(0, 1, 5),
                    receive.descriptor().encode()));
            job.events().subscribe(events::add, error -> { }, () -> { });
        }

        List<String> journal() {
            return journal.since(0).stream().filter(e -> e.requestId().equals(id)).map(JournalEntry::event).toList();
        }

        long chunks() {
            return journal().stream().filter("CHUNK"::equals).count();
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

    @Test
    void aShortPromptBehindALongOneIsDoneBeforeTheLongOneComputesAnotherChunk() {
        startScheduler(new PrefillProperties(CHUNK, 8, 8, Duration.ofSeconds(1)), MS);
        Prompt giant = new Prompt(256);
        scheduler.engineLoop().runOnce();
        assertThat(giant.chunks()).isEqualTo(1);
        Prompt small = new Prompt(32);
        runUntil("the short prompt's chunks", () -> small.chunks() == 2);
        // The short prompt's two chunks came next: the giant computed none after it arrived.
        assertThat(giant.chunks()).isEqualTo(1);
        runUntil("the short prompt's KV delivered", () -> small.job.state() == JobState.DONE);
        runUntil("the giant done", () -> giant.job.state() == JobState.DONE);
        assertThat(giant.chunks()).isEqualTo(16);
    }

    @Test
    void theDefaultRunsMoreThanOnePromptAtOnce() {
        PrefillProperties defaults = new PrefillProperties(CHUNK, 8, 8, Duration.ofSeconds(1));
        assertThat(new org.springframework.boot.context.properties.bind.Binder()
                .bindOrCreate("ripcord.prefill", PrefillProperties.class).maxRunning())
                .isGreaterThan(1).isEqualTo(defaults.maxRunning());
        startScheduler(defaults, MS);
        Prompt a = new Prompt(64);
        Prompt b = new Prompt(64);
        scheduler.engineLoop().runOnce();
        assertThat(scheduler.running()).isEqualTo(2);
        runUntil("both done", () -> a.job.state() == JobState.DONE && b.job.state() == JobState.DONE);
    }

    @Test
    void aQueuedPromptPastItsMaximumWaitEndsBusyWithoutAnyWorkAndTheOthersGoOn() {
        startScheduler(new PrefillProperties(CHUNK, 1, 8, Duration.ofSeconds(1), Duration.ofMillis(10)), MS);
        Prompt running = new Prompt(128);
        scheduler.engineLoop().runOnce();
        Prompt queued = new Prompt(32);
        // Each chunk enters the tiny model's layers: a few "milliseconds" each; the queued prompt is still within
        // its 10 ms after the next chunk, and past it within a few more.
        scheduler.engineLoop().runOnce();
        assertThat(queued.job.state()).isEqualTo(JobState.WAITING);
        runUntil("the queued prompt to expire", () -> queued.job.state().isTerminal());
        assertThat(queued.job.state()).isEqualTo(JobState.FAILED);
        assertThat(queued.journal()).doesNotContain("STARTED", "CHUNK");
        runUntil("the queued prompt's last event", () -> queued.events.getLast() instanceof Failed);
        PrefillEvent last = queued.events.getLast();
        assertThat(last).isInstanceOf(Failed.class);
        assertThat(((Failed) last).code()).isEqualTo(Failed.BUSY);
        assertThat(((Failed) last).message()).contains("maximum wait").contains("retry after");
        assertThat(((Failed) last).retryAfterSeconds()).as("the Retry-After the gateway answers with").isNotNull()
                .isPositive();
        runUntil("the running prompt done", () -> running.job.state() == JobState.DONE);
    }

    @Test
    void aPromptEstimatedToStartPastItsMaximumWaitIsRefusedWithTheQueuesRemainingWorkAsRetryAfter() {
        // One second per layer boundary: a chunk takes a few "seconds", so the estimates are whole seconds.
        startScheduler(new PrefillProperties(CHUNK, 1, 8, Duration.ofSeconds(1), Duration.ofSeconds(30)), SECOND);
        // Before the worker has measured its speed nothing is refused for its wait, and Retry-After is the default.
        assertThat(scheduler.retryAfter()).isEqualTo(Duration.ofSeconds(1));
        Prompt first = new Prompt(CHUNK * 8);
        long before = clock.get();
        scheduler.engineLoop().runOnce();
        long chunkNanos = clock.get() - before;
        double speed = CHUNK * 1e9 / chunkNanos; // tokens per second, as measured over the one chunk
        // 112 tokens of "first" remain. Shorter prompts go first, so the work ahead of a new one is what is shorter.
        Prompt shortOne = new Prompt(CHUNK);
        Prompt middle = new Prompt(200);
        assertThat(middle.job.state()).isEqualTo(JobState.WAITING);
        long remaining = 112 + CHUNK + 200;
        assertThat(remaining / speed).as("a prompt longer than all of them waits for all of them").isGreaterThan(30);
        int[] giant = IntStream.range(0, 300).map(i -> 'a').toArray();
        ReceiveSession receive = decodeSide.openReceive("admission-test-refused", landing,
                List.of(new ByteRange(0, engine.pagePool().pageBytes())));
        assertThatThrownBy(() -> scheduler.submit(new PrefillRequest("admission-test-refused", giant,
                new Sampling(0, 1, 5), receive.descriptor().encode())))
                .isInstanceOfSatisfying(PrefillScheduler.QueueFullException.class, refused -> {
                    assertThat(refused.getMessage()).contains("maximum wait");
                    assertThat(refused.retryAfter())
                            .isEqualTo(Duration.ofSeconds((long) Math.ceil(remaining / speed)));
                });
        receive.abort("test: the prompt was refused");
        assertThat(scheduler.queued()).isEqualTo(2);
        runUntil("all done", () -> first.job.state() == JobState.DONE && shortOne.job.state() == JobState.DONE
                && middle.job.state() == JobState.DONE);
    }

    @Test
    void aPromptWaitsForKvPagesHeldByAnotherInsteadOfFailing() {
        startScheduler(new PrefillProperties(CHUNK, 8, 8, Duration.ofSeconds(1)), MS);
        // 32 pages in the pool: two prompts of 20 pages cannot hold their pages at once.
        Prompt a = new Prompt(320);
        Prompt b = new Prompt(320);
        runUntil("both done", () -> a.job.state().isTerminal() && b.job.state().isTerminal());
        assertThat(a.job.state()).isEqualTo(JobState.DONE);
        assertThat(b.job.state()).isEqualTo(JobState.DONE);
        // b started only once a's pages came back.
        List<String> order = journal.since(0).stream()
                .filter(e -> e.requestId().equals(a.id) || e.requestId().equals(b.id))
                .filter(e -> e.event().equals("STARTED") || e.event().equals("FREED"))
                .map(e -> e.requestId().equals(a.id) ? "a " + e.event() : "b " + e.event()).toList();
        assertThat(order).startsWith("a STARTED", "a FREED", "b STARTED");
    }
}
