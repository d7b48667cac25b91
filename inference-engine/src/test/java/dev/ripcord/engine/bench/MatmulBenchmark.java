package dev.ripcord.engine.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

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
import dev.ripcord.engine.kernel.WorkerPool;
import dev.ripcord.engine.model.PackedMatrix;

/**
 * The GEMM the engine's projections run, {@code Y[512×2048] = X[512×1024] · Wᵀ}, with the engine's work split
 * (dynamic items of one 64-wide weight panel × 128 rows). The score is in MFLOP per millisecond, i.e. GFLOP/s:
 * this is the practical matmul peak the prefill figures are compared with.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class MatmulBenchmark {
    static final int ROWS = 512;
    static final int K = 1024;
    static final int N = 2048;
    static final int ROW_BLOCK = 128;
    /** 2·512·1024·2048 floating-point operations, in millions. */
    static final int MFLOP = (int) (2L * ROWS * K * N / 1_000_000);

    @Param({"2", "1"})
    public int threads;

    @Param({"vector"})
    public String kernels;

    Arena arena;
    WorkerPool pool;
    Kernels k;
    MemorySegment x;
    MemorySegment y;
    PackedMatrix w;
    final AtomicInteger next = new AtomicInteger();

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        pool = new WorkerPool(threads, "bench");
        k = kernels.equals("vector") ? Kernels.vector() : Kernels.scalar(Kernels.vector().lanes());
        SplittableRandom random = new SplittableRandom(1);
        x = arena.allocate((long) ROWS * K * 4, 64);
        MemorySegment rowMajor = arena.allocate((long) N * K * 4, 64);
        for (long i = 0; i < (long) ROWS * K; i++) {
            x.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextGaussian());
        }
        for (long i = 0; i < (long) N * K; i++) {
            rowMajor.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextGaussian() * 0.03f);
        }
        w = PackedMatrix.pack(rowMajor, N, K, 4 * k.lanes(), arena);
        y = arena.allocate((long) ROWS * N * 4, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pool.close();
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(MFLOP)
    public MemorySegment gemm() {
        next.set(0);
        int blocks = ROWS / ROW_BLOCK;
        int items = w.panels() * blocks;
        pool.run((worker, workers) -> {
            int item;
            while ((item = next.getAndIncrement()) < items) {
                int panel = item / blocks;
                int r0 = (item % blocks) * ROW_BLOCK;
                int width = w.panelCols(panel);
                k.gemm(x, (long) r0 * K, K, ROW_BLOCK, K, w.data(), w.panelOffset(panel), width, width,
                        y, (long) r0 * N + (long) panel * w.panelWidth(), N, false);
            }
        });
        return y;
    }
}
