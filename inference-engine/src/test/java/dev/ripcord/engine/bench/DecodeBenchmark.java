package dev.ripcord.engine.bench;

import java.util.ArrayList;
import java.util.List;
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
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;

/**
 * Decode throughput on {@code small}: each invocation is one {@code decodeStep} over {@code batch} sequences whose
 * {@code prompt}-token prompts were prefilled at the start of the iteration, so contexts stay within a few
 * hundred tokens of the prompt. Reported: {@code tokens} per second (batch size per step) and the step rate.
 * Batching shares the 93 MB weight read of a step; each sequence still reads its own KV (16 KiB per position),
 * so the batch speed-up shrinks as the context grows: try {@code -p prompt=32}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class DecodeBenchmark {
    @Param({"1", "4", "8", "16"})
    public int batch;

    @Param({"256"})
    public int prompt;

    InferenceEngine engine;
    int[] tokens;
    final List<Sequence> sequences = new ArrayList<>();

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Tokens {
        public double tokens;

        @Setup(Level.Iteration)
        public void reset() {
            tokens = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        engine = InferenceEngine.create(Preset.SMALL, 1, EngineOptions.defaults().withMaxChunkTokens(prompt)
                .withKvPages(batch * (prompt / 64 + 12) + 8));
        SplittableRandom random = new SplittableRandom(3);
        tokens = new int[prompt];
        for (int i = 0; i < prompt; i++) {
            tokens[i] = 3 + random.nextInt(256);
        }
        engine.warmUp();
    }

    @Setup(Level.Iteration)
    public void startSequences() {
        for (int i = 0; i < batch; i++) {
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            engine.prefill(seq, tokens, 0, prompt);
            engine.sample(seq);
            sequences.add(seq);
        }
    }

    @TearDown(Level.Iteration)
    public void freeSequences() {
        sequences.forEach(engine::free);
        sequences.clear();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        engine.close();
    }

    @Benchmark
    public int[] decodeStep(Tokens counter) {
        int[] next = engine.decodeStep(sequences);
        counter.tokens += batch;
        return next;
    }
}
