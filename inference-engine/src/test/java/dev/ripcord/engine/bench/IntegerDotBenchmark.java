package dev.ripcord.engine.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import dev.ripcord.engine.kernel.Kernels;
import dev.ripcord.engine.kernel.QuantKernelTwinsTest;
import dev.ripcord.format.gguf.GgmlType;

/**
 * The integer dot products ({@link Kernels#dotQ8}) alone, one thread: every row of a 2048 × 2048 quantized weight
 * matrix (random blocks, 4.5 MB at Q8_0, so it sits in the last-level cache) against {@code rows} quantized
 * activation rows, as a decode step ({@code rows = 1}) or a four-row tile calls them. The score is nanoseconds per
 * 32 weights (per block of 32, for all {@code rows} activation rows together): the kernel's compute cost, apart
 * from streaming the weights from memory (which `./ripcord model-bench` measures over whole models).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class IntegerDotBenchmark {
    static final int K = 2048;
    static final int N = 2048;

    @Param({"Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    public String type;

    @Param({"1", "4"})
    public int rows;

    Arena arena;
    Kernels kernels;
    GgmlType t;
    MemorySegment w;
    MemorySegment x;
    MemorySegment qa;
    MemorySegment c;
    long rowBytes;
    long qaStride;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        kernels = Kernels.vector();
        t = GgmlType.valueOf(type);
        SplittableRandom random = new SplittableRandom(1);
        byte[] blocks = QuantKernelTwinsTest.randomBlocks(random, t, N * K / t.blockSize());
        w = arena.allocate(blocks.length, 64);
        MemorySegment.copy(MemorySegment.ofArray(blocks), 0, w, 0, blocks.length);
        rowBytes = (long) K / t.blockSize() * t.typeSize();
        qaStride = Kernels.activationRowBytes(K);
        x = arena.allocate(4L * K * rows, 64);
        for (int i = 0; i < K * rows; i++) {
            x.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) random.nextGaussian());
        }
        qa = arena.allocate(qaStride * rows, 64);
        for (int r = 0; r < rows; r++) {
            kernels.quantizeActivations(t, x, (long) r * K, K, qa, r * qaStride);
        }
        c = arena.allocate(4L * N * rows, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(N * K / 32)
    public MemorySegment dotQ8() {
        for (int j = 0; j < N; j++) {
            kernels.dotQ8(t, w, j * rowBytes, K, qa, 0, qaStride, rows, c, j, N);
        }
        return c;
    }

    /**
     * The decode path's pairs ({@link Kernels#dotQ8Pair}): row {@code j} with row {@code j + N/2}, one activation
     * row (with {@code rows = 4} it still reads only the first). Nanoseconds per 32 weights of one row.
     */
    @Benchmark
    @OperationsPerInvocation(N * K / 32)
    public MemorySegment dotQ8Pair() {
        for (int j = 0; j < N / 2; j++) {
            kernels.dotQ8Pair(t, w, j * rowBytes, (j + N / 2) * rowBytes, K, qa, 0, c, j, j + N / 2);
        }
        return c;
    }

    /**
     * The decode path's float pairs ({@link Kernels#dotQuantizedPair}) against the first activation row as floats:
     * the table kernels for Q4_0 and Q4_K at 16 lanes, two fused dequantize-and-dot calls otherwise (Q8_0; the
     * K-quants without a table then dequantize each row into a fresh array). Nanoseconds per 32 weights of one row.
     */
    @Benchmark
    @OperationsPerInvocation(N * K / 32)
    public MemorySegment dotQuantizedPair() {
        for (int j = 0; j < N / 2; j++) {
            kernels.dotQuantizedPair(t, w, j * rowBytes, (j + N / 2) * rowBytes, K, x, 0, c, j, j + N / 2);
        }
        return c;
    }
}
