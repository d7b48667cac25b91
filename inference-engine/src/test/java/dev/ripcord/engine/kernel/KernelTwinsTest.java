package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Every vector kernel against its scalar twin. Tolerance: zero. The twins perform the same IEEE operations in the
 * same order (FMA chains, per-lane partial sums folded in lane order, the same exp polynomial), so any difference,
 * even in the last bit, is a bug: it would make a vector engine and a scalar one, or two JIT states, disagree.
 * Shapes are random and include every tile edge (rows 1..9, columns not multiple of the lane count, k = 0).
 */
class KernelTwinsTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final Kernels VECTOR = Kernels.vector();
    static final Kernels SCALAR = Kernels.scalar(VECTOR.lanes());
    static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void release() {
        ARENA.close();
    }

    static MemorySegment random(SplittableRandom r, long n, double scale) {
        MemorySegment s = ARENA.allocate(Math.max(1, n) * 4, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (float) ((r.nextDouble() * 2 - 1) * scale));
        }
        return s;
    }

    static MemorySegment copy(MemorySegment s) {
        MemorySegment c = ARENA.allocate(s.byteSize(), 64);
        c.copyFrom(s);
        return c;
    }

    /** Runs {@code op} with each kernel set on its own copy of {@code data} and requires identical bytes. */
    static void assertTwins(MemorySegment data, String what, java.util.function.BiConsumer<Kernels, MemorySegment> op) {
        MemorySegment v = copy(data);
        MemorySegment s = copy(data);
        op.accept(VECTOR, v);
        op.accept(SCALAR, s);
        assertThat(v.mismatch(s)).as("first differing byte of %s", what).isEqualTo(-1L);
    }

    /**
     * The build runs these twins once at the platform's width and again with the width forced to 128 and 512 bits
     * (inference-engine's pom): each run must really compute at its width, or the forced runs test nothing new.
     */
    @Test
    void theKernelsRunAtTheForcedWidthOrElseThePlatformsPreferredOne() {
        String forced = System.getProperty(Kernels.VECTOR_BITS_PROPERTY);
        int expected = forced == null || forced.isBlank()
                ? jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.length() : Integer.parseInt(forced.trim()) / 32;
        assertThat(VECTOR.lanes()).as("float lanes with %s=%s", Kernels.VECTOR_BITS_PROPERTY, forced)
                .isEqualTo(expected);
        assertThat(VectorKernels.IS.length()).as("int lanes of the integer dot products").isEqualTo(expected);
    }

    @Test
    void gemmVectorEqualsScalarBitForBitOnEveryTileShape() {
        SplittableRandom r = new SplittableRandom(1);
        for (int trial = 0; trial < 300; trial++) {
            int rows = 1 + r.nextInt(9);
            int k = r.nextInt(70);
            int cols = 1 + r.nextInt(4 * VECTOR.lanes() + 40);
            long lda = k + r.nextInt(5);
            long ldb = cols + r.nextInt(5);
            long ldc = cols + r.nextInt(5);
            long aOff = r.nextInt(7);
            long bOff = r.nextInt(7);
            long cOff = r.nextInt(7);
            MemorySegment a = random(r, aOff + rows * lda, 1);
            MemorySegment b = random(r, bOff + Math.max(1, k) * ldb, 1);
            boolean accumulate = r.nextBoolean();
            MemorySegment c = random(r, cOff + rows * ldc, 1);
            String shape = "rows=%d k=%d cols=%d acc=%b".formatted(rows, k, cols, accumulate);
            assertTwins(c, shape, (kernels, out) ->
                    kernels.gemm(a, aOff, lda, rows, k, b, bOff, ldb, cols, out, cOff, ldc, accumulate));
        }
    }

    @Test
    void gemmComputesTheMatrixProduct() {
        SplittableRandom r = new SplittableRandom(2);
        int rows = 7;
        int k = 53;
        int cols = 77;
        MemorySegment a = random(r, rows * k, 1);
        MemorySegment b = random(r, k * cols, 1);
        MemorySegment c = ARENA.allocate(rows * cols * 4L, 64);
        VECTOR.gemm(a, 0, k, rows, k, b, 0, cols, cols, c, 0, cols, false);
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                double expected = 0;
                for (int p = 0; p < k; p++) {
                    expected += (double) a.getAtIndex(F, i * k + p) * b.getAtIndex(F, p * cols + j);
                }
                assertThat((double) c.getAtIndex(F, i * cols + j)).isCloseTo(expected, within(1e-5));
            }
        }
    }

    @Test
    void reductionsAndElementwiseKernelsEqualTheirScalarTwins() {
        SplittableRandom r = new SplittableRandom(3);
        for (int trial = 0; trial < 200; trial++) {
            int n = r.nextInt(200);
            long off = r.nextInt(9);
            MemorySegment x = random(r, off + n, 10);
            MemorySegment y = random(r, off + n, 10);
            MemorySegment w = random(r, off + n, 2);
            float[] results = new float[2];
            assertThat(VECTOR.sumOfSquares(x, off, n)).as("sumOfSquares n=%d", n)
                    .isEqualTo(SCALAR.sumOfSquares(x, off, n));
            assertThat(VECTOR.max(x, off, n)).as("max n=%d", n).isEqualTo(SCALAR.max(x, off, n));
            assertTwins(x, "rmsnorm", (k, s) -> k.rmsnorm(s, off, s, off, w, off, n, 1e-5f));
            assertTwins(x, "scale", (k, s) -> k.scale(s, off, n, 0.37f));
            assertTwins(x, "divide", (k, s) -> k.divide(s, off, n, 3.3f));
            assertTwins(x, "add", (k, s) -> k.add(s, off, y, off, n));
            assertTwins(x, "swiglu", (k, s) -> k.swiglu(s, off, y, off, n));
            assertTwins(x, "expAndSum n=" + n, (k, s) -> results[k == VECTOR ? 0 : 1] = k.expAndSum(s, off, n, 5f));
            assertThat(results[0]).as("exp sum n=%d", n).isEqualTo(results[1]);
        }
    }

    @Test
    void ropeEqualsItsScalarTwinForEveryHeadSize() {
        SplittableRandom r = new SplittableRandom(4);
        for (int h = 2; h <= 80; h += 2) {
            int headSize = h;
            int heads = 1 + r.nextInt(4);
            MemorySegment cos = random(r, headSize, 1);
            MemorySegment sin = random(r, headSize, 1);
            MemorySegment x = random(r, 3 + (long) heads * headSize, 3);
            assertTwins(x, "rope headSize=" + headSize, (k, s) -> k.rope(s, 3, heads, headSize, cos, sin, 0));
        }
    }

    @Test
    void expIsAccurateToAFewUlpOverTheSoftmaxRange() {
        for (float x = -87f; x <= 88f; x += 0.001953125f) {
            double expected = Math.exp(x);
            assertThat((double) Exp.exp(x)).as("exp(%s)", x).isCloseTo(expected, within(expected * 4e-7));
        }
        assertThat(Exp.exp(-1000f)).isPositive().isLessThan(1e-37f);
        assertThat(Exp.exp(1000f)).isFinite();
    }

    @Test
    void scalarTwinsWithOtherLaneCountsStillComputeTheSameSums() {
        SplittableRandom r = new SplittableRandom(5);
        MemorySegment x = random(r, 1000, 1);
        double exact = 0;
        for (int i = 0; i < 1000; i++) {
            exact += (double) x.getAtIndex(F, i) * x.getAtIndex(F, i);
        }
        for (int lanes : new int[] {1, 4, 8, 16, 32}) {
            assertThat((double) Kernels.scalar(lanes).sumOfSquares(x, 0, 1000)).isCloseTo(exact, within(1e-3));
        }
    }

}
