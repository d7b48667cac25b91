package dev.ripcord.decode.scheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import dev.ripcord.kv.testing.KvLeakCheck;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A seeded randomized hammer over the same space as {@link CancelMatrixTest}: random phase, source, mode, prompt
 * length and completion length, one after another on one pair of workers (so that what one request leaves behind
 * would break the next). {@code -Dripcord.hammer.iterations} (default 2 000) and {@code -Dripcord.hammer.seed}
 * (default: a fresh one) override; a failure names the seed and the iteration to rerun it with.
 */
@ExtendWith(KvLeakCheck.class)
class CancelHammerTest {

    @Test
    void randomCancelsAcrossPhasesSourcesAndModesEachEndOnceAndLeaveNothing() {
        int iterations = Integer.getInteger("ripcord.hammer.iterations", 2_000);
        long seed = Long.getLong("ripcord.hammer.seed", System.nanoTime());
        List<CancelScenario> space = new ArrayList<>();
        for (CancelScenario.Phase phase : CancelScenario.Phase.values()) {
            for (CancelScenario.Source source : CancelScenario.Source.values()) {
                for (CancelScenario.Mode mode : CancelScenario.Mode.values()) {
                    CancelScenario s = new CancelScenario(phase, source, mode, 0, 0);
                    if (s.meaningless() == null) {
                        space.add(s);
                    }
                }
            }
        }
        SplittableRandom random = new SplittableRandom(seed);
        java.util.Map<CancelScenario.Phase, long[]> perPhase = new java.util.EnumMap<>(CancelScenario.Phase.class);
        long start = System.nanoTime();
        try (TwoWorkers workers = new TwoWorkers()) {
            for (int i = 0; i < iterations; i++) {
                CancelScenario pick = space.get(random.nextInt(space.size()));
                // At least two chunks (mid-chunk and between-chunks need them); at least two decode steps to go.
                int prompt = TwoWorkers.CHUNK_TOKENS + 1 + random.nextInt(2 * TwoWorkers.CHUNK_TOKENS);
                int completion = 5 + random.nextInt(2);
                CancelScenario scenario = new CancelScenario(pick.phase(), pick.source(), pick.mode(), prompt,
                        completion);
                long t0 = System.nanoTime();
                try {
                    scenario.run(workers, "hammer-" + i);
                    long[] acc = perPhase.computeIfAbsent(pick.phase(), p -> new long[2]);
                    acc[0]++;
                    acc[1] += System.nanoTime() - t0;
                } catch (AssertionError | RuntimeException e) {
                    throw new AssertionError("hammer failed at iteration " + i + " of " + iterations + " (" + scenario
                            + "); rerun with -Dripcord.hammer.seed=" + seed, e);
                }
            }
        }
        System.out.printf("cancel hammer: %d iterations, seed %d, %.1f s%n", iterations, seed,
                (System.nanoTime() - start) / 1e9);
        perPhase.forEach((phase, acc) -> System.out.printf("  %-18s %5d runs, %.2f ms each%n", phase, acc[0],
                acc[1] / 1e6 / Math.max(1, acc[0])));
    }
}
