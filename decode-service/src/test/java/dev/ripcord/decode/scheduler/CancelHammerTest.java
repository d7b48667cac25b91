package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.kv.Backend;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.worker.job.JobState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A seeded randomized hammer over the space of {@link CancelMatrixTest}, with the interleavings the matrix cannot
 * have: each round runs many requests through both workers at once (prefill interleaves several prompts chunk by
 * chunk, decode batches several sequences), and each request gets a random source, propagation mode and moment for
 * its cancel (a number of engine-loop rounds after admission: queued, connecting, mid-prefill, transfer in flight,
 * awaiting KV, decoding or after completion, as it falls), or none. After each round every request is checked
 * (terminal state and reason/source on both workers, journal order, exactly one abort per cancelled job) and
 * nothing may be left: pages, sessions, regions, registrations.
 *
 * <p>{@code -Dripcord.hammer.iterations} (requests; default 10 000) and {@code -Dripcord.hammer.seed} (default: a
 * fresh one) override; a failure names the seed to rerun it with.
 */
@ExtendWith(KvLeakCheck.class)
class CancelHammerTest {

    private static final int PER_ROUND = 50;
    /** Cancel moments span a request's life in a round: beyond it the cancel lands after completion. */
    private static final int LATEST_TICK = 400;

    /** One request of a round and its planned cancel. */
    private static final class Plan {
        final String id;
        final CancelScenario.Source source;
        final CancelScenario.Mode mode;
        final int cancelAt; // engine-loop round after which the cancel is delivered; -1: never
        TwoWorkers.Request request;
        PrefillJob prefillJob;
        boolean delivered;

        Plan(String id, CancelScenario.Source source, CancelScenario.Mode mode, int cancelAt) {
            this.id = id;
            this.source = source;
            this.mode = mode;
            this.cancelAt = cancelAt;
        }
    }

    @Test
    void randomCancelsAcrossPhasesSourcesAndModesEachEndOnceAndLeaveNothing() {
        int iterations = Integer.getInteger("ripcord.hammer.iterations", 10_000);
        long seed = Long.getLong("ripcord.hammer.seed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        long start = System.nanoTime();
        int cancelled = 0;
        // Decode batches a whole round: every request of a round is admitted at once (reserve waits for RESERVED).
        try (TwoWorkers workers = new TwoWorkers(4, Backend.TCP, Backend.TCP,
                new DecodeProperties.Admission(256, java.time.Duration.ofSeconds(20)), PER_ROUND)) {
            for (int done = 0, round = 0; done < iterations; round++) {
                int n = Math.min(PER_ROUND, iterations - done);
                try {
                    cancelled += round(workers, random, round, n);
                } catch (AssertionError | RuntimeException e) {
                    throw new AssertionError("hammer failed in round " + round + " (requests " + done + ".."
                            + (done + n - 1) + " of " + iterations + "); rerun with -Dripcord.hammer.seed=" + seed, e);
                }
                done += n;
            }
        }
        // CPU seconds as well as wall seconds: on a loaded machine the wall clock says more about the neighbours.
        double cpu = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
        System.out.printf("cancel hammer: %d requests (%d cancelled at decode), seed %d, %.1f s wall, %.1f s CPU "
                + "(whole JVM)%n", iterations, cancelled, seed, (System.nanoTime() - start) / 1e9, cpu);
    }

    private static int round(TwoWorkers w, SplittableRandom random, int round, int n) {
        long prefillAborts = w.prefill.aborts();
        long decodeAborts = w.decode.aborts();
        List<Plan> plans = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CancelScenario.Source source = CancelScenario.Source.values()[random.nextInt(
                    CancelScenario.Source.values().length)];
            CancelScenario.Mode mode = CancelScenario.Mode.values()[random.nextInt(CancelScenario.Mode.values().length)];
            if (new CancelScenario(CancelScenario.Phase.QUEUED, source, mode, 0, 0).meaningless() != null) {
                mode = CancelScenario.Mode.KAFKA; // a Kafka-only source: carried by Kafka
            }
            int cancelAt = random.nextInt(5) == 0 ? -1 : random.nextInt(LATEST_TICK);
            plans.add(new Plan("hammer-" + round + "-" + i, source, mode, cancelAt));
        }
        // Admission: tombstones first, then every reservation at decode, then every prompt at prefill.
        for (Plan p : plans) {
            if (p.source == CancelScenario.Source.TOMBSTONE && p.cancelAt >= 0) {
                w.decodeRegistry.cancel(p.id, p.source.reason, CancelSource.KAFKA);
                w.prefillRegistry.cancel(p.id, p.source.reason, CancelSource.KAFKA);
                p.delivered = true;
            }
        }
        for (Plan p : plans) {
            p.request = w.reserve(p.id, TwoWorkers.CHUNK_TOKENS + 1 + random.nextInt(2 * TwoWorkers.CHUNK_TOKENS),
                    4 + random.nextInt(4));
        }
        for (Plan p : plans) {
            if (p.request.transfer() != null) {
                p.prefillJob = p.request.startPrefill();
            }
        }
        // Run both workers, delivering each cancel at its moment.
        for (int tick = 0; ; tick++) {
            for (Plan p : plans) {
                if (!p.delivered && p.cancelAt >= 0 && p.cancelAt <= tick) {
                    deliver(w, p);
                }
            }
            boolean worked = w.stepBoth();
            boolean allOver = plans.stream().allMatch(p -> p.request.decodeJob.state().isTerminal()
                    && (p.prefillJob == null || p.prefillJob.state().isTerminal()));
            if (allOver && plans.stream().allMatch(p -> p.delivered || p.cancelAt < 0)) {
                break;
            }
            if (!worked) {
                Thread.yield();
            }
        }
        w.runUntilQuiet();
        int cancelledJobs = 0;
        for (Plan p : plans) {
            cancelledJobs += check(w, p);
        }
        assertThat(w.prefill.aborts() - prefillAborts + w.decode.aborts() - decodeAborts)
                .as("one abort per cancelled job, on each worker").isEqualTo(cancelledJobs);
        CancelScenario.assertNothingLeaked(w);
        return (int) plans.stream().filter(p -> p.request.decodeJob.state() == JobState.CANCELLED).count();
    }

    private static void deliver(TwoWorkers w, Plan p) {
        p.delivered = true;
        boolean decodeHears = p.source != CancelScenario.Source.UPSTREAM;
        if (p.mode != CancelScenario.Mode.KAFKA) {
            if (decodeHears && !p.request.decodeEnded) {
                w.decodeRegistry.cancel(p.id, p.source.reason, CancelSource.IN_BAND);
            }
            if (p.prefillJob != null && !p.request.prefillEnded) {
                w.prefillRegistry.cancel(p.id, p.source.reason, CancelSource.IN_BAND);
            }
        }
        if (p.mode != CancelScenario.Mode.IN_BAND) {
            int copies = p.source == CancelScenario.Source.KAFKA_REPLAY ? 2 : 1;
            for (int i = 0; i < copies; i++) {
                if (decodeHears) {
                    w.decodeRegistry.cancel(p.id, p.source.reason, CancelSource.KAFKA);
                }
                w.prefillRegistry.cancel(p.id, p.source.reason, CancelSource.KAFKA);
            }
        }
    }

    /** Checks one request; returns how many of its jobs (0..2) ended cancelled. */
    private static int check(TwoWorkers w, Plan p) {
        JobState decode = p.request.decodeJob.state();
        JobState prefill = p.prefillJob == null ? null : p.prefillJob.state();
        assertThat(decode).as("%s decode", p.id).isIn(JobState.DONE, JobState.CANCELLED);
        if (p.cancelAt < 0) {
            assertThat(decode).as("%s never cancelled", p.id).isEqualTo(JobState.DONE);
            assertThat(prefill).as("%s never cancelled", p.id).isEqualTo(JobState.DONE);
        }
        Set<CancelSource> sources = p.source == CancelScenario.Source.TOMBSTONE ? Set.of(CancelSource.TOMBSTONE)
                : Set.of(CancelSource.IN_BAND, CancelSource.KAFKA, CancelSource.UPSTREAM);
        int cancelledJobs = 0;
        if (decode == JobState.CANCELLED) {
            cancelledJobs++;
            assertThat(p.request.decodeJob.cancelRequest().reason()).isEqualTo(p.source.reason);
            assertThat(p.request.decodeJob.cancelRequest().source()).isIn(sources);
            assertThat(p.request.decodeEvents).last().isEqualTo(new Cancelled(p.source.reason,
                    p.request.decodeJob.cancelRequest().source()));
            assertThat(w.decodeRegistry.isCancelled(p.id)).isTrue();
            if (p.source == CancelScenario.Source.UPSTREAM) {
                assertThat(prefill).as("%s: decode can only have learned it from prefill", p.id)
                        .isEqualTo(JobState.CANCELLED);
                assertThat(p.request.decodeJob.cancelRequest().source()).isEqualTo(CancelSource.UPSTREAM);
            }
        }
        if (prefill != null) {
            assertThat(prefill).as("%s prefill", p.id).isIn(JobState.DONE, JobState.CANCELLED);
            assertThat(p.request.prefillEnded).isTrue();
            if (prefill == JobState.CANCELLED) {
                cancelledJobs++;
                assertThat(p.prefillJob.cancelRequest().reason()).isEqualTo(p.source.reason);
                assertThat(p.request.prefillEvents).last().isEqualTo(new Cancelled(p.source.reason,
                        p.prefillJob.cancelRequest().source()));
            }
            CancelScenario.checkJournal(TwoWorkers.entries(w.prefillJournal, p.id), prefill,
                    Set.of("REMOVED_FROM_QUEUE", "STOPPED", "CANCELLED_AT_ADMISSION"), "STARTED", "DONE");
        }
        assertThat(p.request.decodeEnded).isTrue();
        CancelScenario.checkJournal(TwoWorkers.entries(w.decodeJournal, p.id), decode,
                Set.of("TRANSFER_ABORTED", "STOPPED", "CANCELLED_AT_ADMISSION"), "RESERVED", "FINISHED");
        return cancelledJobs;
    }
}
