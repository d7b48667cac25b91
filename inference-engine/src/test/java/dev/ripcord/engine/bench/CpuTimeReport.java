package dev.ripcord.engine.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.engine.kernel.Kernels;
import dev.ripcord.engine.model.PackedMatrix;

/**
 * The JMH workloads again, single-threaded and timed in <em>thread CPU time</em>: figures that survive a machine
 * shared with other busy processes, where wall-clock benchmarks on two cores are mostly noise. Prints GEMM
 * GFLOP per CPU-second, prefill tokens and GFLOP per CPU-second per chunk size, and decode tokens per
 * CPU-second per batch size. Not a benchmark harness (no statistics): the best of a few repetitions.
 *
 * <p>Run each section in its own JVM, as JMH forks do: a standalone GEMM compiled before or after the engine's
 * kernels measurably slowed whichever came second (JIT profile interplay; the services only ever run the
 * engine).
 *
 * <pre>./ripcord bench inference-engine -l   # compiles
 * for s in gemm prefill decode safepoints decode-stop; do $(./ripcord java | head -1)/bin/java --add-modules jdk.incubator.vector \
 *     -cp inference-engine/target/test-classes:inference-engine/target/classes \
 *     dev.ripcord.engine.bench.CpuTimeReport $s; done</pre>
 */
public final class CpuTimeReport {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    private CpuTimeReport() {
    }

    public static void main(String[] args) {
        System.out.printf("CPU-time report, %d processors, load average %.1f%n",
                Runtime.getRuntime().availableProcessors(),
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        String section = args.length > 0 ? args[0] : "prefill";
        if (section.equals("gemm")) {
            gemm();
            return;
        }
        if (section.equals("safepoints")) {
            safePoints();
            return;
        }
        if (section.equals("decode-stop")) {
            decodeStop(args.length > 1 ? Integer.parseInt(args[1]) : 4096);
            return;
        }
        EngineOptions options = EngineOptions.defaults().withThreads(1).withKvPages(120);
        try (InferenceEngine engine = InferenceEngine.create(Preset.SMALL, 1, options)) {
            engine.warmUp();
            if (section.equals("prefill")) {
                prefill(engine);
            } else {
                decode(engine, 32);
                decode(engine, 256);
            }
        }
    }

    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    static void gemm() {
        int rows = 512;
        int k = 1024;
        int n = 2048;
        Kernels kernels = Kernels.vector();
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom random = new SplittableRandom(1);
            MemorySegment x = arena.allocate((long) rows * k * 4, 64);
            MemorySegment rowMajor = arena.allocate((long) n * k * 4, 64);
            for (long i = 0; i < (long) rows * k; i++) {
                x.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextGaussian());
            }
            for (long i = 0; i < (long) n * k; i++) {
                rowMajor.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextGaussian() * 0.03f);
            }
            PackedMatrix w = PackedMatrix.pack(rowMajor, n, k, 4 * kernels.lanes(), arena);
            MemorySegment y = arena.allocate((long) rows * n * 4, 64);
            double best = 0;
            for (int rep = 0; rep < 12; rep++) {
                long t0 = cpu();
                for (int p = 0; p < w.panels(); p++) {
                    for (int r0 = 0; r0 < rows; r0 += 128) {
                        int width = w.panelCols(p);
                        kernels.gemm(x, (long) r0 * k, k, 128, k, w.data(), w.panelOffset(p), width, width,
                                y, (long) r0 * n + (long) p * w.panelWidth(), n, false);
                    }
                }
                best = Math.max(best, 2.0 * rows * k * n / (cpu() - t0));
            }
            System.out.printf("gemm 512x1024x2048: %.1f GFLOP per CPU-second (best of 12)%n", best);
        }
    }

    static void prefill(InferenceEngine engine) {
        int prompt = 2048;
        int[] tokens = new SplittableRandom(7).ints(prompt, 3, 259).toArray();
        ModelConfig c = engine.config();
        for (int chunk : new int[] {64, 128, 256, 512, 1024, 2048}) {
            double flops = (prompt / chunk) * c.classifierFlops();
            for (int p = 0; p < prompt; p++) {
                flops += c.flopsPerToken(p);
            }
            double best = Double.MAX_VALUE;
            for (int rep = 0; rep < 3; rep++) {
                Sequence seq = engine.newSequence(SamplingParams.greedy());
                long t0 = cpu();
                for (int from = 0; from < prompt; from += chunk) {
                    engine.prefill(seq, tokens, from, Math.min(prompt, from + chunk));
                }
                best = Math.min(best, (cpu() - t0) / 1e9);
                engine.free(seq);
            }
            System.out.printf("prefill %d tokens, chunk %4d: %6.0f tokens and %5.1f GFLOP per CPU-second%n", prompt,
                    chunk, prompt / best, flops / best / 1e9);
        }
    }

    /**
     * What the stop checks between layers cost prefill: two engines with the same weights, one with
     * {@link EngineOptions#safePoints()} off, prefill the same prompt alternately (on, off, on, off, ...) so that
     * whatever else the machine does falls on both; per chunk size, the median and best tokens per CPU-second of
     * each and their ratio.
     */
    static void safePoints() {
        EngineOptions options = EngineOptions.defaults().withThreads(1).withKvPages(40);
        try (InferenceEngine on = InferenceEngine.create(Preset.SMALL, 1, options);
             InferenceEngine off = InferenceEngine.create(Preset.SMALL, 1, options.withSafePoints(false))) {
            on.warmUp();
            off.warmUp();
            int prompt = 1024;
            int[] tokens = new SplittableRandom(7).ints(prompt, 3, 259).toArray();
            for (int chunk : new int[] {64, 512}) {
                List<Double> withChecks = new ArrayList<>();
                List<Double> without = new ArrayList<>();
                for (int rep = 0; rep < 7; rep++) {
                    withChecks.add(prefillRate(on, tokens, chunk));
                    without.add(prefillRate(off, tokens, chunk));
                }
                withChecks.sort(null);
                without.sort(null);
                double medianOn = withChecks.get(withChecks.size() / 2);
                double medianOff = without.get(without.size() / 2);
                System.out.printf("prefill %d tokens, chunk %3d, 7 interleaved runs each: with checks median %.0f "
                                + "best %.0f, without median %.0f best %.0f tokens per CPU-second; with/without: "
                                + "median %.3f, best %.3f%n", prompt, chunk, medianOn, withChecks.getLast(), medianOff,
                        without.getLast(), medianOn / medianOff, withChecks.getLast() / without.getLast());
            }
        }
    }

    /**
     * Decode's cancel-to-stop inside a step, one thread, {@code small}: a batch of four sequences at {@code context}
     * positions; in each round (seven, interleaved) one step of all four, one step where the second one's stop
     * arrives as its first attention item of layer 0 starts, and one step of the other three alone. Prints, in
     * thread CPU time (medians): the stopped sequence's cancel-to-stop (from its stop to the next per-sequence item
     * of the step: the one attention item it was running), and the three steps, so that what the stopped sequence
     * still cost the step (its row of the shared projections) reads as the stopped step less the step without it.
     */
    static void decodeStop(int positions) {
        int sequences = 4;
        // Room for the rounds' steps within the model's context.
        int context = Math.min(positions, Preset.SMALL.config().contextLength() - 32);
        int pages = (context + 64) / 64 + 1;
        EngineOptions options = EngineOptions.defaults().withThreads(1).withKvPages(pages * (sequences + 1) + 8);
        try (InferenceEngine engine = InferenceEngine.create(Preset.SMALL, 1, options)) {
            engine.warmUp();
            int[] prompt = new SplittableRandom(5).ints(context, 3, 259).toArray();
            Sequence first = engine.newSequence(SamplingParams.greedy());
            for (int from = 0; from < context; from += 512) {
                engine.prefill(first, prompt, from, Math.min(context, from + 512));
            }
            engine.sample(first);
            List<Sequence> batch = new ArrayList<>(List.of(first));
            for (int i = 1; i < sequences; i++) {
                batch.add(engine.fork(first, SamplingParams.greedy()));
            }
            List<Double> full = new ArrayList<>();
            List<Double> stopped = new ArrayList<>();
            List<Double> without = new ArrayList<>();
            List<Double> cancelToStop = new ArrayList<>();
            for (int round = 0; round < 7; round++) {
                long t0 = cpu();
                engine.decodeStep(batch);
                full.add((cpu() - t0) / 1e6);

                Sequence victim = engine.fork(batch.get(1), SamplingParams.greedy());
                List<Sequence> withVictim = List.of(batch.get(0), victim, batch.get(2), batch.get(3));
                long[] stopAt = {-1, -1};
                engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
                    @Override
                    public void beforeLayer(int layer) {
                    }

                    @Override
                    public void rowItem(int layer, int row) {
                        if (stopAt[0] >= 0 && stopAt[1] < 0) {
                            stopAt[1] = cpu(); // the next per-sequence item: the stopped one's has ended
                        } else if (stopAt[0] < 0 && row == 1 && layer == 0) {
                            stopAt[0] = cpu();
                            victim.requestStop();
                        }
                    }
                });
                try {
                    t0 = cpu();
                    int[] tokens = engine.decodeStep(withVictim);
                    stopped.add((cpu() - t0) / 1e6);
                    if (tokens[1] != InferenceEngine.STOPPED) {
                        throw new IllegalStateException("the stopped sequence was sampled");
                    }
                } finally {
                    engine.onLayerBoundary(null);
                }
                cancelToStop.add((stopAt[1] - stopAt[0]) / 1e6);
                engine.free(victim);

                t0 = cpu();
                engine.decodeStep(List.of(batch.get(0), batch.get(2), batch.get(3)));
                without.add((cpu() - t0) / 1e6);
            }
            batch.forEach(engine::free);
            System.out.printf("decode, small, 1 thread, %d sequences at %d positions, 7 interleaved rounds, medians "
                            + "in CPU ms: cancel-to-stop of one sequence inside a step (one attention item) %.3f; "
                            + "step of %d %.2f, with one stopped at layer 0 %.2f, of the other %d alone %.2f%n",
                    sequences, context, median(cancelToStop), sequences, median(full), median(stopped),
                    sequences - 1, median(without));
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        return sorted.get(sorted.size() / 2);
    }

    private static double prefillRate(InferenceEngine engine, int[] tokens, int chunk) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            long t0 = cpu();
            for (int from = 0; from < tokens.length; from += chunk) {
                engine.prefill(seq, tokens, from, Math.min(tokens.length, from + chunk));
            }
            return tokens.length / ((cpu() - t0) / 1e9);
        } finally {
            engine.free(seq);
        }
    }

    static void decode(InferenceEngine engine, int promptLength) {
        int[] prompt = new SplittableRandom(3).ints(promptLength, 3, 259).toArray();
        for (int batch : new int[] {1, 4, 8, 16}) {
            double best = 0;
            for (int rep = 0; rep < 3; rep++) {
                List<Sequence> sequences = new ArrayList<>();
                for (int i = 0; i < batch; i++) {
                    Sequence seq = engine.newSequence(SamplingParams.greedy());
                    engine.prefill(seq, prompt, 0, prompt.length);
                    engine.sample(seq);
                    sequences.add(seq);
                }
                int steps = 48;
                long t0 = cpu();
                for (int s = 0; s < steps; s++) {
                    engine.decodeStep(sequences);
                }
                best = Math.max(best, batch * steps / ((cpu() - t0) / 1e9));
                sequences.forEach(engine::free);
            }
            System.out.printf("decode batch %2d (context %d-%d): %6.0f tokens per CPU-second%n", batch, promptLength,
                    promptLength + 48, best);
        }
    }
}
