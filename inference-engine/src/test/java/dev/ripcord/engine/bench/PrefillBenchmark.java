package dev.ripcord.engine.bench;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;

/**
 * Prefill throughput on {@code small}: one invocation prefills a fresh {@value #PROMPT}-token prompt in chunks of
 * {@code chunk} tokens. Reported per second: {@code tokens} and {@code mflop} (model FLOPs actually required:
 * projections, attention over the growing context, and the output projection of each chunk's last token), so
 * {@code mflop/1000} is the achieved GFLOP/s to set against {@link MatmulBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 4)
@Measurement(iterations = 3, time = 4)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class PrefillBenchmark {
    static final int PROMPT = 2048;

    @Param({"64", "128", "256", "512", "1024", "2048"})
    public int chunk;

    InferenceEngine engine;
    int[] prompt;
    double flopsPerPrompt;

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Work {
        public double tokens;
        public double mflop;

        @Setup(Level.Iteration)
        public void reset() {
            tokens = 0;
            mflop = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        engine = InferenceEngine.create(Preset.SMALL, 1, EngineOptions.defaults().withMaxChunkTokens(PROMPT)
                .withKvPages(2 * PROMPT / 64 + 2));
        SplittableRandom random = new SplittableRandom(7);
        engine.warmUp();
        prompt = new int[PROMPT];
        for (int i = 0; i < PROMPT; i++) {
            prompt[i] = 3 + random.nextInt(256);
        }
        ModelConfig c = engine.config();
        for (int p = 0; p < PROMPT; p++) {
            flopsPerPrompt += c.flopsPerToken(p);
        }
        flopsPerPrompt += (PROMPT / chunk) * c.classifierFlops();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        engine.close();
    }

    @Benchmark
    public float prefill(Work work) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            for (int from = 0; from < PROMPT; from += chunk) {
                engine.prefill(seq, prompt, from, Math.min(PROMPT, from + chunk));
            }
            work.tokens += PROMPT;
            work.mflop += flopsPerPrompt / 1e6;
            return engine.logits(seq)[0];
        } finally {
            engine.free(seq);
        }
    }
}
