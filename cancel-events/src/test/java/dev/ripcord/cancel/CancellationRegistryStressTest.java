package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hammers {@link CancellationRegistry} with randomized interleavings of register / cancel (from several threads and
 * sources, replays included) / complete, and checks after every round, per request, that the abort handler ran
 * exactly once when a cancel found the request live or a registration found a tombstone, and never when the request
 * completed first. Guards against double aborts and lost aborts in the register/cancel/complete races.
 *
 * <p>Each request gets one register-then-complete operation and 0 to 3 cancel operations (random sources, so
 * replays of the same source too), each on a random one of {@value #THREADS} threads. Requests are processed in waves
 * of {@value #WAVE}, in lockstep: all threads pass a gate, half of the wave's requests get registered (phase A), all
 * threads pass a second gate, then every remaining operation of the wave runs at once (phase B), in request order on
 * every thread so that operations on one request meet in time, with random spins deciding who wins. Phase B thus
 * races cancels against cancels and against completion on live registrations, and registrations against cancels
 * (tombstones) for the other half. Without the gates, operations on one request almost never overlap; with them the
 * test caught a double abort (register re-reading state that a concurrent cancel had just changed) and catches a
 * check-then-set in place of either CAS. Old rounds' tombstones pile up past the table's bound, so eviction runs
 * concurrently too. Seeded: a failure message carries the seed. (The double abort needed a nanosecond window to show;
 * {@code CancellationRegistryTest#aCancelLandingJustAfterRegisterIsAbortedOnlyOnce} now reproduces it deterministically.)
 */
class CancellationRegistryStressTest {

    private static final int THREADS = 4;
    private static final int IDS_PER_ROUND = 500;
    private static final int ROUNDS = 200;
    private static final int MAX_SPINS = 64;
    /** Requests per lockstep gate: small enough that operations on one request still overlap. */
    private static final int WAVE = 32;
    private static final CancelSource[] SIGNALS = {CancelSource.KAFKA, CancelSource.IN_BAND, CancelSource.DEADLINE,
            CancelSource.SHUTDOWN, CancelSource.EXPLICIT};

    private final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    /** What happened to each request of one round. */
    private static final class Round {
        final AtomicIntegerArray aborts = new AtomicIntegerArray(IDS_PER_ROUND);
        final AtomicReferenceArray<CancelSource> handlerSource = new AtomicReferenceArray<>(IDS_PER_ROUND);
        final AtomicReferenceArray<CancelSource> abortingCancelSource = new AtomicReferenceArray<>(IDS_PER_ROUND);
        final int[][] outcomes = new int[IDS_PER_ROUND][CancelOutcome.values().length];
        final int[] cancels = new int[IDS_PER_ROUND];
        final boolean[] completedNormally = new boolean[IDS_PER_ROUND];

        synchronized void outcome(int i, CancelOutcome outcome) {
            outcomes[i][outcome.ordinal()]++;
        }

        synchronized int count(int i, CancelOutcome outcome) {
            return outcomes[i][outcome.ordinal()];
        }
    }

    @Test
    void everyRequestIsAbortedExactlyOnceOrNeverUnderRandomInterleavings() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        CancellationRegistry registry = new CancellationRegistry(
                new CancellationRegistry.Options(Duration.ofHours(1), 10_000));
        long iterations = 0;
        long liveAborts = 0;
        long tombstoneHits = 0;
        long completedFirst = 0;
        long lateCancels = 0;

        for (int r = 0; r < ROUNDS; r++) {
            Round round = new Round();
            String prefix = "s" + r + "-";
            // phaseA/phaseB.get(t).get(i): what thread t does for request i in each phase (often nothing).
            List<List<List<Runnable>>> phaseA = emptyPlan();
            List<List<List<Runnable>>> phaseB = emptyPlan();
            Registration[] handles = new Registration[IDS_PER_ROUND];
            for (int i = 0; i < IDS_PER_ROUND; i++) {
                int index = i;
                String id = prefix + i;
                int before = random.nextInt(MAX_SPINS);
                int hold = random.nextInt(MAX_SPINS);
                AbortHandler handler = (requestId, reason, source) -> {
                    round.aborts.incrementAndGet(index);
                    round.handlerSource.set(index, source);
                };
                int registrar = random.nextInt(THREADS);
                if (random.nextBoolean()) {
                    phaseA.get(registrar).get(i).add(() -> handles[index] = registry.register(id, handler));
                    phaseB.get(registrar).get(i).add(() -> {
                        spin(hold);
                        round.completedNormally[index] = handles[index].complete();
                    });
                } else {
                    phaseB.get(registrar).get(i).add(() -> {
                        spin(before);
                        Registration registration = registry.register(id, handler);
                        spin(hold);
                        round.completedNormally[index] = registration.complete();
                    });
                }
                int cancels = switch (random.nextInt(20)) {
                    case 0, 1, 2, 3 -> 0;
                    case 4, 5, 6, 7, 8, 9, 10, 11 -> 1;
                    case 12, 13, 14, 15, 16 -> 2;
                    default -> 3;
                };
                round.cancels[i] = cancels;
                for (int c = 0; c < cancels; c++) {
                    CancelSource source = SIGNALS[random.nextInt(SIGNALS.length)];
                    int cancelSpins = random.nextInt(MAX_SPINS);
                    List<Runnable> mine = phaseB.get(random.nextInt(THREADS)).get(i);
                    mine.add(random.nextInt(mine.size() + 1), () -> {
                        spin(cancelSpins);
                        CancelOutcome outcome = registry.cancel(id, CancelReason.CLIENT_DISCONNECT, source);
                        if (outcome == CancelOutcome.ABORTED) {
                            round.abortingCancelSource.set(index, source);
                        }
                        round.outcome(index, outcome);
                    });
                }
            }
            runInLockstep(phaseA, phaseB);

            for (int i = 0; i < IDS_PER_ROUND; i++) {
                String where = "request %s (seed %d)".formatted(prefix + i, seed);
                int aborts = round.aborts.get(i);
                int abortedByCancel = round.count(i, CancelOutcome.ABORTED);
                boolean hitTombstone = round.handlerSource.get(i) == CancelSource.TOMBSTONE;
                int tombstoned = round.count(i, CancelOutcome.TOMBSTONED);

                assertThat(aborts).as("aborts of " + where).isLessThanOrEqualTo(1);
                assertThat(aborts).as("aborts of " + where + " = live aborts + tombstone hits")
                        .isEqualTo(abortedByCancel + (hitTombstone ? 1 : 0));
                if (round.completedNormally[i]) {
                    assertThat(aborts).as("completed first, so never aborted: " + where).isZero();
                } else {
                    assertThat(aborts).as("complete() lost to a cancel, so aborted once: " + where).isEqualTo(1);
                }
                if (round.cancels[i] == 0) {
                    assertThat(round.completedNormally[i]).as("no cancel, so completed normally: " + where).isTrue();
                }
                if (abortedByCancel == 1) {
                    assertThat(round.handlerSource.get(i)).as("handler source of " + where)
                            .isEqualTo(round.abortingCancelSource.get(i));
                }
                assertThat(tombstoned).as("tombstones created for " + where).isLessThanOrEqualTo(1);
                if (tombstoned == 1) {
                    assertThat(hitTombstone || round.completedNormally[i])
                            .as("a tombstone is created only before registration or after normal completion: " + where)
                            .isTrue();
                }
                if (round.count(i, CancelOutcome.COMPLETED) > 0) {
                    assertThat(round.completedNormally[i]).as("COMPLETED outcome for " + where).isTrue();
                }
                iterations++;
                liveAborts += abortedByCancel;
                tombstoneHits += hitTombstone ? 1 : 0;
                completedFirst += round.completedNormally[i] && round.cancels[i] > 0 ? 1 : 0;
                lateCancels += round.completedNormally[i] ? tombstoned : 0;
            }
            assertThat(registry.liveRegistrations()).as("leaked registrations after round %d", r).isZero();
        }

        assertThat(iterations).isGreaterThanOrEqualTo(100_000);
        assertThat(registry.tombstones()).isLessThanOrEqualTo(10_000);
        // The interleavings this test exists for all happened, not just the easy ones.
        assertThat(liveAborts).as("cancels that found the request live").isPositive();
        assertThat(tombstoneHits).as("registrations that found a tombstone").isPositive();
        assertThat(completedFirst).as("requests that completed before any cancel").isPositive();
        assertThat(lateCancels).as("cancels after normal completion").isPositive();
        registry.assertNoLiveRegistrations();
    }

    private static List<List<List<Runnable>>> emptyPlan() {
        List<List<List<Runnable>>> plan = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            List<List<Runnable>> perRequest = new ArrayList<>();
            for (int i = 0; i < IDS_PER_ROUND; i++) {
                perRequest.add(new ArrayList<>(2));
            }
            plan.add(perRequest);
        }
        return plan;
    }

    private void runInLockstep(List<List<List<Runnable>>> phaseA, List<List<List<Runnable>>> phaseB)
            throws Exception {
        AtomicInteger arrived = new AtomicInteger();
        List<Future<?>> running = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            List<List<Runnable>> a = phaseA.get(t);
            List<List<Runnable>> b = phaseB.get(t);
            running.add(pool.submit(() -> {
                int gates = 0;
                for (int wave = 0; wave < IDS_PER_ROUND; wave += WAVE) {
                    int end = Math.min(IDS_PER_ROUND, wave + WAVE);
                    awaitAll(arrived, ++gates * THREADS);
                    runAll(a, wave, end);
                    awaitAll(arrived, ++gates * THREADS);
                    runAll(b, wave, end);
                }
                return null;
            }));
        }
        for (Future<?> future : running) {
            future.get(60, TimeUnit.SECONDS);
        }
        if (failure.get() != null) {
            throw new AssertionError("an operation threw", failure.get());
        }
    }

    /** Runs the operations of requests [from, to); one that throws is recorded, and the thread stays in lockstep. */
    private void runAll(List<List<Runnable>> perRequest, int from, int to) {
        for (int i = from; i < to; i++) {
            for (Runnable op : perRequest.get(i)) {
                try {
                    op.run();
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }
        }
    }

    /** A reusable gate: arrive, then wait until {@code target} arrivals. Spins briefly, then yields the core. */
    private static void awaitAll(AtomicInteger arrived, int target) {
        arrived.incrementAndGet();
        for (int n = 0; arrived.get() < target; n++) {
            if (n < 64) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
    }

    private static void spin(int spins) {
        for (int i = 0; i < spins; i++) {
            Thread.onSpinWait();
        }
    }
}
