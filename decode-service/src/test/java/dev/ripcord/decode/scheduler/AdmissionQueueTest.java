package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.job.JobState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Decode's admission queue: a request whose KV pages cannot be committed now, or that finds every batch slot
 * taken, waits, oldest first (a smaller one that fits may pass a larger one until the larger one has aged), instead
 * of being refused; it is refused (503) only when the queue is full or it waited {@code max-wait}. Facts only: order,
 * counts, states, nothing leaked.
 */
@ExtendWith(KvLeakCheck.class)
class AdmissionQueueTest {

    private static final Duration NEVER = Duration.ofMinutes(10);

    @Test
    void aSmallRequestThatFitsPassesALargeOneThatDoesNotUntilTheLargeOneHasAged() {
        try (TwoWorkers w = new TwoWorkers(1, Backend.TCP, Backend.TCP, new DecodeProperties.Admission(8, NEVER))) {
            List<TwoWorkers.Request> blockers = CancelScenario.fillDecodePool(w, "pass");
            // Give back all but 3 pages' worth of one blocker: 3 pages are uncommitted, a small request's need.
            w.decodeRegistry.cancel(blockers.removeLast().id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("the blocker's pages back", () -> w.decodeEngine.pagePool().pagesLive() == blockers.size());
            blockers.add(w.reserve("pass-partial", 1, TwoWorkers.CONTEXT_TOKENS - 3 * TwoWorkers.PAGE_TOKENS - 1));

            // 5 pages: does not fit in 3. Small ones (3 pages) pass it until 5 pages have been committed past it.
            CompletableFuture<DecodeJob> large = submit(w, "pass-large", 1, 4 * TwoWorkers.PAGE_TOKENS + 1);
            CompletableFuture<DecodeJob> first = submit(w, "pass-small-1", 1, 2 * TwoWorkers.PAGE_TOKENS);
            w.decodeLoop().runUntilIdle(1000);
            assertThat(large).isNotDone();
            assertThat(first).as("fits beside the large one's wait: passes it").isDone();
            assertThat(TwoWorkers.events(w.decodeJournal, "pass-small-1")).containsExactly("RESERVED");

            w.decodeRegistry.cancel("pass-small-1", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("its pages back", () -> TwoWorkers.events(w.decodeJournal, "pass-small-1").contains("FREED"));
            CompletableFuture<DecodeJob> second = submit(w, "pass-small-2", 1, 2 * TwoWorkers.PAGE_TOKENS);
            w.decodeLoop().runUntilIdle(1000);
            assertThat(second).as("3 pages passed it so far, it needs 5: passes again").isDone();

            w.decodeRegistry.cancel("pass-small-2", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("its pages back", () -> TwoWorkers.events(w.decodeJournal, "pass-small-2").contains("FREED"));
            CompletableFuture<DecodeJob> third = submit(w, "pass-small-3", 1, 2 * TwoWorkers.PAGE_TOKENS);
            w.decodeLoop().runUntilIdle(1000);
            assertThat(third).as("6 pages passed the large one: it has aged, nobody passes it now").isNotDone();
            assertThat(w.decode.queuedForPages()).isEqualTo(2);

            w.decodeRegistry.cancel(blockers.removeFirst().id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("both admitted", () -> large.isDone() && third.isDone());
            List<String> order = w.decodeJournal.since(0).stream().filter(e -> e.event().equals("RESERVED"))
                    .map(JournalEntry::requestId).filter(id -> id.startsWith("pass-l") || id.startsWith("pass-s"))
                    .toList();
            assertThat(order).containsExactly("pass-small-1", "pass-small-2", "pass-large", "pass-small-3");

            cancelAll(w, blockers, large.join(), third.join());
            CancelScenario.assertNothingLeaked(w);
        }
    }

    @Test
    void retryAfterIsTheWorkInHandAtTheMeasuredStepTimeNotAlwaysOneSecond() {
        Duration fallback = Duration.ofSeconds(1);
        assertThat(DecodeScheduler.estimateRetryAfter(0, 10_000, 8, fallback)).as("no step measured yet")
                .isEqualTo(fallback);
        // 10 000 tokens, 8 at a time: 1 250 steps of 20 ms: 25 s.
        assertThat(DecodeScheduler.estimateRetryAfter(20e6, 10_000, 8, fallback)).isEqualTo(Duration.ofSeconds(25));
        // Never below a second, rounded up.
        assertThat(DecodeScheduler.estimateRetryAfter(20e6, 1, 8, fallback)).isEqualTo(Duration.ofSeconds(1));
        assertThat(DecodeScheduler.estimateRetryAfter(20e6, 401, 8, fallback)).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void noRefusalWhileTheQueueHasRoomAndOneWhenItIsFull() {
        try (TwoWorkers w = new TwoWorkers(1, Backend.TCP, Backend.TCP, new DecodeProperties.Admission(3, NEVER))) {
            List<TwoWorkers.Request> blockers = CancelScenario.fillDecodePool(w, "full");
            List<CompletableFuture<DecodeJob>> waiting = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                waiting.add(submit(w, "full-" + i, 8, 8));
            }
            CompletableFuture<DecodeJob> fourth = submit(w, "full-3", 8, 8);
            w.decodeLoop().runUntilIdle(1000);

            assertThat(waiting).allSatisfy(f -> assertThat(f).isNotDone());
            assertThat(w.decode.queuedForPages()).isEqualTo(3);
            assertThat(fourth).isCompletedExceptionally();
            assertThat(failure(fourth)).isInstanceOf(DecodeScheduler.NoCapacityException.class)
                    .hasMessageContaining("queue is full");
            assertThat(w.decodeRegistry.liveRegistrations()).as("the refused one is not kept")
                    .isEqualTo(blockers.size() + 3);

            // Pages come back: all three waiting requests are admitted, none refused.
            w.decodeRegistry.cancel(blockers.removeFirst().id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("the three admitted", () -> waiting.stream().allMatch(CompletableFuture::isDone));
            assertThat(waiting).allSatisfy(f -> assertThat(f.join().state()).isEqualTo(JobState.WAITING));
            assertThat(w.decode.queuedForPages()).isZero();

            cancelAll(w, blockers, waiting.stream().map(CompletableFuture::join).toArray(DecodeJob[]::new));
            CancelScenario.assertNothingLeaked(w);
        }
    }

    @Test
    void aRequestThatWaitedMaxWaitIsRefusedAndKeepsNothing() {
        try (TwoWorkers w = new TwoWorkers(1, Backend.TCP, Backend.TCP,
                new DecodeProperties.Admission(8, Duration.ofMillis(1)))) {
            List<TwoWorkers.Request> blockers = CancelScenario.fillDecodePool(w, "wait");
            CompletableFuture<DecodeJob> late = submit(w, "wait-late", 8, 8);
            w.runUntil("max-wait to pass", late::isDone);

            assertThat(failure(late)).isInstanceOf(DecodeScheduler.NoCapacityException.class)
                    .hasMessageContaining("waited");
            assertThat(TwoWorkers.events(w.decodeJournal, "wait-late")).containsExactly("QUEUED", "REFUSED");
            assertThat(w.decode.queuedForPages()).isZero();
            assertThat(w.decodeRegistry.liveRegistrations()).isEqualTo(blockers.size());

            cancelAll(w, blockers);
            CancelScenario.assertNothingLeaked(w);
        }
    }

    @Test
    void aRequestWaitsForABatchSlotSoNoAdmittedRequestWaitsToJoinTheBatch() {
        try (TwoWorkers w = new TwoWorkers(1, Backend.TCP, Backend.TCP, new DecodeProperties.Admission(8, NEVER), 2)) {
            TwoWorkers.Request a = w.reserve("slot-a", 8, 8);
            TwoWorkers.Request b = w.reserve("slot-b", 8, 8);
            CompletableFuture<DecodeJob> c = submit(w, "slot-c", 8, 8);
            w.decodeLoop().runUntilIdle(1000);

            assertThat(c).as("pages are plenty, but both slots are taken").isNotDone();
            assertThat(w.decode.queuedForPages()).isEqualTo(1);
            assertThat(w.decodeEngine.pagePool().pagesLive()).as("nothing reserved for the waiting one").isEqualTo(2);

            w.decodeRegistry.cancel(a.id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
            w.runUntil("slot-c admitted", c::isDone);

            assertThat(c.join().state()).isEqualTo(JobState.WAITING);
            assertThat(TwoWorkers.events(w.decodeJournal, "slot-c")).containsExactly("QUEUED", "RESERVED");
            List<String> order = w.decodeJournal.since(0).stream()
                    .filter(e -> e.requestId().equals("slot-c") && e.event().equals("RESERVED")
                            || e.requestId().equals("slot-a") && e.event().equals("FREED"))
                    .map(JournalEntry::requestId).toList();
            assertThat(order).as("the slot is taken only once the cancelled job's pages are back")
                    .containsExactly("slot-a", "slot-c");

            cancelAll(w, List.of(b), c.join());
            CancelScenario.assertNothingLeaked(w);
        }
    }

    @Test
    void requestsThatFitAreReservedAtOnceWithoutQueueing() {
        try (TwoWorkers w = new TwoWorkers(1, Backend.TCP, Backend.TCP, new DecodeProperties.Admission(1, NEVER))) {
            TwoWorkers.Request a = w.reserve("fit-a", 8, 8);
            TwoWorkers.Request b = w.reserve("fit-b", 8, 8);

            assertThat(a.decodeEvents).first().isInstanceOf(DecodeEvent.Reserved.class);
            assertThat(b.decodeEvents).first().isInstanceOf(DecodeEvent.Reserved.class);
            assertThat(((DecodeEvent.Reserved) a.decodeEvents.getFirst()).pairing())
                    .as("RESERVED names what the prefill worker must share")
                    .isEqualTo(new dev.ripcord.protocol.Pairing(dev.ripcord.worker.WorkerContext.UNIDENTIFIED_MODEL,
                            w.decodeEngine.numerics()));
            assertThat(TwoWorkers.events(w.decodeJournal, "fit-b")).containsExactly("RESERVED");

            cancelAll(w, List.of(a, b));
            CancelScenario.assertNothingLeaked(w);
        }
    }

    private static CompletableFuture<DecodeJob> submit(TwoWorkers w, String id, int prompt, int max) {
        return w.decode.submit(new DecodeRequest(id, prompt, max, new Sampling(0, 1, 42), true));
    }

    private static Throwable failure(CompletableFuture<?> f) {
        try {
            f.join();
            throw new AssertionError("completed normally");
        } catch (CompletionException e) {
            return e.getCause();
        }
    }

    private static void cancelAll(TwoWorkers w, List<TwoWorkers.Request> requests, DecodeJob... jobs) {
        for (TwoWorkers.Request r : requests) {
            w.decodeRegistry.cancel(r.id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
        }
        for (DecodeJob job : jobs) {
            w.decodeRegistry.cancel(job.requestId(), CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
        }
        w.runUntilQuiet();
    }
}
