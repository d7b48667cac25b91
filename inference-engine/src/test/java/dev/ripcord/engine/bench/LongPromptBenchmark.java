package dev.ripcord.engine.bench;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

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
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;

/**
 * Wall time of one full-context prefill on {@code small}: the cost a cancelled long prompt would keep burning.
 * Single shot (one prompt per iteration); the engine is warmed up in setup so the figure is the steady state.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 0)
@Measurement(iterations = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class LongPromptBenchmark {
    @Param({"16384"})
    public int tokens;

    @Param({"512"})
    public int chunk;

    InferenceEngine engine;
    int[] prompt;

    @Setup(Level.Trial)
    public void setUp() {
        engine = InferenceEngine.create(Preset.SMALL, 1, EngineOptions.defaults().withMaxChunkTokens(chunk)
                .withKvPages(tokens / 64 + 2));
        SplittableRandom random = new SplittableRandom(11);
        prompt = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            prompt[i] = 3 + random.nextInt(256);
        }
        engine.warmUp();
        Sequence warm = engine.newSequence(SamplingParams.greedy());
        for (int from = 0; from < 4 * chunk; from += chunk) {
            engine.prefill(warm, prompt, from, from + chunk);
        }
        engine.free(warm);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        engine.close();
    }

    @Benchmark
    public float prefillFullContext() {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            for (int from = 0; from < tokens; from += chunk) {
                engine.prefill(seq, prompt, from, Math.min(tokens, from + chunk));
            }
            return engine.logits(seq)[0];
        } finally {
            engine.free(seq);
        }
    }
}
