package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import dev.ripcord.format.gguf.GgmlType;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API kernels. Each has the same visible shape: a vector body over whole vectors, then a scalar tail that
 * performs the scalar twin's operations on the remaining elements.
 *
 * <p>The GEMM is the classic broadcast-FMA register-blocked micro-kernel: a tile of up to 4 rows of A times 4
 * vectors of B's columns keeps 16 accumulators in registers, loading 4 vectors of B and broadcasting 4 scalars of
 * A per step of {@code k} (4x4, with 2x4, 1x4, 4x1 and 1x1 tiles for the edges). Tiles never split the {@code k}
 * loop, so each output element is one FMA chain.
 *
 * <p>Rule for this class: no vector ever crosses a method boundary we own. Vector API methods are
 * {@code @ForceInline}, but C2 inlines an ordinary helper (even a one-line {@code load(segment, offset)}) only if
 * it has not already been compiled "into a medium method"; when it refuses, every vector passed through the call
 * is boxed and each FMA falls back to the Java implementation, about 50 times slower and allocating gigabytes
 * per second. Which compile wins depends on timing, so the failure came and went between runs. Hence the
 * verbose inline loads and the exp polynomial written out in both kernels that need it.
 */
final class VectorKernels implements Kernels {
    static final VectorSpecies<Float> S = species();
    static final int L = S.length();
    static final long VB = 4L * L; // bytes per vector
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final VectorShuffle<Float> SWAP_PAIRS = VectorShuffle.fromOp(S, i -> i ^ 1);
    static final VectorKernels INSTANCE = new VectorKernels();

    private VectorKernels() {
    }

    private static VectorSpecies<Float> species() {
        String bits = System.getProperty(VECTOR_BITS_PROPERTY);
        if (bits == null || bits.isBlank()) {
            return FloatVector.SPECIES_PREFERRED;
        }
        return switch (bits.trim()) {
            case "128" -> FloatVector.SPECIES_128;
            case "256" -> FloatVector.SPECIES_256;
            case "512" -> FloatVector.SPECIES_512;
            default -> throw new IllegalArgumentException(
                    VECTOR_BITS_PROPERTY + " must be 128, 256 or 512, got '" + bits + "'");
        };
    }

    @Override
    public int lanes() {
        return L;
    }

    @Override
    public String name() {
        return "vector";
    }

    // ---------------------------------------------------------------- GEMM

    @Override
    public void gemm(MemorySegment a, long aOff, long lda, int rows, int k,
                     MemorySegment b, long bOff, long ldb, int cols,
                     MemorySegment c, long cOff, long ldc, boolean accumulate) {
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            long ar = aOff + r * lda;
            long cr = cOff + r * ldc;
            int j = 0;
            for (; j + 4 * L <= cols; j += 4 * L) {
                tile4x4(a, ar, lda, k, b, bOff + j, ldb, c, cr + j, ldc, accumulate);
            }
            for (; j + L <= cols; j += L) {
                tile4x1(a, ar, lda, k, b, bOff + j, ldb, c, cr + j, ldc, accumulate);
            }
            if (j < cols) {
                scalarColumns(a, ar, lda, 4, k, b, bOff, ldb, j, cols, c, cr, ldc, accumulate);
            }
        }
        if (r + 2 <= rows) {
            long ar = aOff + r * lda;
            long cr = cOff + r * ldc;
            int j = 0;
            for (; j + 4 * L <= cols; j += 4 * L) {
                tile2x4(a, ar, lda, k, b, bOff + j, ldb, c, cr + j, ldc, accumulate);
            }
            for (; j + L <= cols; j += L) {
                tile1x1(a, ar, k, b, bOff + j, ldb, c, cr + j, accumulate);
                tile1x1(a, ar + lda, k, b, bOff + j, ldb, c, cr + ldc + j, accumulate);
            }
            if (j < cols) {
                scalarColumns(a, ar, lda, 2, k, b, bOff, ldb, j, cols, c, cr, ldc, accumulate);
            }
            r += 2;
        }
        for (; r < rows; r++) {
            long ar = aOff + r * lda;
            long cr = cOff + r * ldc;
            int j = 0;
            for (; j + 4 * L <= cols; j += 4 * L) {
                tile1x4(a, ar, k, b, bOff + j, ldb, c, cr + j, accumulate);
            }
            for (; j + L <= cols; j += L) {
                tile1x1(a, ar, k, b, bOff + j, ldb, c, cr + j, accumulate);
            }
            if (j < cols) {
                scalarColumns(a, ar, lda, 1, k, b, bOff, ldb, j, cols, c, cr, ldc, accumulate);
            }
        }
    }

    /** The scalar tail: columns {@code [j0, cols)} the vectors did not cover; the twin's exact arithmetic. */
    private static void scalarColumns(MemorySegment a, long aOff, long lda, int rows, int k,
                                      MemorySegment b, long bOff, long ldb, int j0, int cols,
                                      MemorySegment c, long cOff, long ldc, boolean accumulate) {
        for (int r = 0; r < rows; r++) {
            for (int j = j0; j < cols; j++) {
                long ci = (cOff + r * ldc + j) << 2;
                float acc = accumulate ? c.get(F, ci) : 0f;
                for (int i = 0; i < k; i++) {
                    acc = Math.fma(a.get(F, (aOff + r * lda + i) << 2), b.get(F, (bOff + i * ldb + j) << 2), acc);
                }
                c.set(F, ci, acc);
            }
        }
    }

    private static void tile4x4(MemorySegment a, long aOff, long lda, int k,
                                MemorySegment b, long bOff, long ldb,
                                MemorySegment c, long cOff, long ldc, boolean accumulate) {
        long c0 = cOff << 2;
        long c1 = (cOff + ldc) << 2;
        long c2 = (cOff + 2 * ldc) << 2;
        long c3 = (cOff + 3 * ldc) << 2;
        FloatVector z = FloatVector.zero(S);
        FloatVector c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        FloatVector c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
        if (accumulate) {
            c00 = FloatVector.fromMemorySegment(S, c, c0, LE);
            c01 = FloatVector.fromMemorySegment(S, c, c0 + VB, LE);
            c02 = FloatVector.fromMemorySegment(S, c, c0 + 2 * VB, LE);
            c03 = FloatVector.fromMemorySegment(S, c, c0 + 3 * VB, LE);
            c10 = FloatVector.fromMemorySegment(S, c, c1, LE);
            c11 = FloatVector.fromMemorySegment(S, c, c1 + VB, LE);
            c12 = FloatVector.fromMemorySegment(S, c, c1 + 2 * VB, LE);
            c13 = FloatVector.fromMemorySegment(S, c, c1 + 3 * VB, LE);
            c20 = FloatVector.fromMemorySegment(S, c, c2, LE);
            c21 = FloatVector.fromMemorySegment(S, c, c2 + VB, LE);
            c22 = FloatVector.fromMemorySegment(S, c, c2 + 2 * VB, LE);
            c23 = FloatVector.fromMemorySegment(S, c, c2 + 3 * VB, LE);
            c30 = FloatVector.fromMemorySegment(S, c, c3, LE);
            c31 = FloatVector.fromMemorySegment(S, c, c3 + VB, LE);
            c32 = FloatVector.fromMemorySegment(S, c, c3 + 2 * VB, LE);
            c33 = FloatVector.fromMemorySegment(S, c, c3 + 3 * VB, LE);
        }
        long a0 = aOff << 2;
        long a1 = (aOff + lda) << 2;
        long a2 = (aOff + 2 * lda) << 2;
        long a3 = (aOff + 3 * lda) << 2;
        long bRow = bOff << 2;
        long bStep = ldb << 2;
        for (int i = 0; i < k; i++, bRow += bStep) {
            FloatVector b0 = FloatVector.fromMemorySegment(S, b, bRow, LE);
            FloatVector b1 = FloatVector.fromMemorySegment(S, b, bRow + VB, LE);
            FloatVector b2 = FloatVector.fromMemorySegment(S, b, bRow + 2 * VB, LE);
            FloatVector b3 = FloatVector.fromMemorySegment(S, b, bRow + 3 * VB, LE);
            long ai = (long) i << 2;
            FloatVector x = FloatVector.broadcast(S, a.get(F, a0 + ai));
            c00 = x.fma(b0, c00);
            c01 = x.fma(b1, c01);
            c02 = x.fma(b2, c02);
            c03 = x.fma(b3, c03);
            x = FloatVector.broadcast(S, a.get(F, a1 + ai));
            c10 = x.fma(b0, c10);
            c11 = x.fma(b1, c11);
            c12 = x.fma(b2, c12);
            c13 = x.fma(b3, c13);
            x = FloatVector.broadcast(S, a.get(F, a2 + ai));
            c20 = x.fma(b0, c20);
            c21 = x.fma(b1, c21);
            c22 = x.fma(b2, c22);
            c23 = x.fma(b3, c23);
            x = FloatVector.broadcast(S, a.get(F, a3 + ai));
            c30 = x.fma(b0, c30);
            c31 = x.fma(b1, c31);
            c32 = x.fma(b2, c32);
            c33 = x.fma(b3, c33);
        }
        c00.intoMemorySegment(c, c0, LE);
        c01.intoMemorySegment(c, c0 + VB, LE);
        c02.intoMemorySegment(c, c0 + 2 * VB, LE);
        c03.intoMemorySegment(c, c0 + 3 * VB, LE);
        c10.intoMemorySegment(c, c1, LE);
        c11.intoMemorySegment(c, c1 + VB, LE);
        c12.intoMemorySegment(c, c1 + 2 * VB, LE);
        c13.intoMemorySegment(c, c1 + 3 * VB, LE);
        c20.intoMemorySegment(c, c2, LE);
        c21.intoMemorySegment(c, c2 + VB, LE);
        c22.intoMemorySegment(c, c2 + 2 * VB, LE);
        c23.intoMemorySegment(c, c2 + 3 * VB, LE);
        c30.intoMemorySegment(c, c3, LE);
        c31.intoMemorySegment(c, c3 + VB, LE);
        c32.intoMemorySegment(c, c3 + 2 * VB, LE);
        c33.intoMemorySegment(c, c3 + 3 * VB, LE);
    }

    private static void tile4x1(MemorySegment a, long aOff, long lda, int k,
                                MemorySegment b, long bOff, long ldb,
                                MemorySegment c, long cOff, long ldc, boolean accumulate) {
        long c0 = cOff << 2;
        long c1 = (cOff + ldc) << 2;
        long c2 = (cOff + 2 * ldc) << 2;
        long c3 = (cOff + 3 * ldc) << 2;
        FloatVector z = FloatVector.zero(S);
        FloatVector c00 = z, c10 = z, c20 = z, c30 = z;
        if (accumulate) {
            c00 = FloatVector.fromMemorySegment(S, c, c0, LE);
            c10 = FloatVector.fromMemorySegment(S, c, c1, LE);
            c20 = FloatVector.fromMemorySegment(S, c, c2, LE);
            c30 = FloatVector.fromMemorySegment(S, c, c3, LE);
        }
        long a0 = aOff << 2;
        long a1 = (aOff + lda) << 2;
        long a2 = (aOff + 2 * lda) << 2;
        long a3 = (aOff + 3 * lda) << 2;
        long bRow = bOff << 2;
        long bStep = ldb << 2;
        for (int i = 0; i < k; i++, bRow += bStep) {
            FloatVector b0 = FloatVector.fromMemorySegment(S, b, bRow, LE);
            long ai = (long) i << 2;
            c00 = FloatVector.broadcast(S, a.get(F, a0 + ai)).fma(b0, c00);
            c10 = FloatVector.broadcast(S, a.get(F, a1 + ai)).fma(b0, c10);
            c20 = FloatVector.broadcast(S, a.get(F, a2 + ai)).fma(b0, c20);
            c30 = FloatVector.broadcast(S, a.get(F, a3 + ai)).fma(b0, c30);
        }
        c00.intoMemorySegment(c, c0, LE);
        c10.intoMemorySegment(c, c1, LE);
        c20.intoMemorySegment(c, c2, LE);
        c30.intoMemorySegment(c, c3, LE);
    }

    private static void tile2x4(MemorySegment a, long aOff, long lda, int k,
                                MemorySegment b, long bOff, long ldb,
                                MemorySegment c, long cOff, long ldc, boolean accumulate) {
        long c0 = cOff << 2;
        long c1 = (cOff + ldc) << 2;
        FloatVector z = FloatVector.zero(S);
        FloatVector c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        if (accumulate) {
            c00 = FloatVector.fromMemorySegment(S, c, c0, LE);
            c01 = FloatVector.fromMemorySegment(S, c, c0 + VB, LE);
            c02 = FloatVector.fromMemorySegment(S, c, c0 + 2 * VB, LE);
            c03 = FloatVector.fromMemorySegment(S, c, c0 + 3 * VB, LE);
            c10 = FloatVector.fromMemorySegment(S, c, c1, LE);
            c11 = FloatVector.fromMemorySegment(S, c, c1 + VB, LE);
            c12 = FloatVector.fromMemorySegment(S, c, c1 + 2 * VB, LE);
            c13 = FloatVector.fromMemorySegment(S, c, c1 + 3 * VB, LE);
        }
        long a0 = aOff << 2;
        long a1 = (aOff + lda) << 2;
        long bRow = bOff << 2;
        long bStep = ldb << 2;
        for (int i = 0; i < k; i++, bRow += bStep) {
            FloatVector b0 = FloatVector.fromMemorySegment(S, b, bRow, LE);
            FloatVector b1 = FloatVector.fromMemorySegment(S, b, bRow + VB, LE);
            FloatVector b2 = FloatVector.fromMemorySegment(S, b, bRow + 2 * VB, LE);
            FloatVector b3 = FloatVector.fromMemorySegment(S, b, bRow + 3 * VB, LE);
            long ai = (long) i << 2;
            FloatVector x = FloatVector.broadcast(S, a.get(F, a0 + ai));
            c00 = x.fma(b0, c00);
            c01 = x.fma(b1, c01);
            c02 = x.fma(b2, c02);
            c03 = x.fma(b3, c03);
            x = FloatVector.broadcast(S, a.get(F, a1 + ai));
            c10 = x.fma(b0, c10);
            c11 = x.fma(b1, c11);
            c12 = x.fma(b2, c12);
            c13 = x.fma(b3, c13);
        }
        c00.intoMemorySegment(c, c0, LE);
        c01.intoMemorySegment(c, c0 + VB, LE);
        c02.intoMemorySegment(c, c0 + 2 * VB, LE);
        c03.intoMemorySegment(c, c0 + 3 * VB, LE);
        c10.intoMemorySegment(c, c1, LE);
        c11.intoMemorySegment(c, c1 + VB, LE);
        c12.intoMemorySegment(c, c1 + 2 * VB, LE);
        c13.intoMemorySegment(c, c1 + 3 * VB, LE);
    }

    private static void tile1x4(MemorySegment a, long aOff, int k,
                                MemorySegment b, long bOff, long ldb,
                                MemorySegment c, long cOff, boolean accumulate) {
        long c0 = cOff << 2;
        FloatVector z = FloatVector.zero(S);
        FloatVector c00 = z, c01 = z, c02 = z, c03 = z;
        if (accumulate) {
            c00 = FloatVector.fromMemorySegment(S, c, c0, LE);
            c01 = FloatVector.fromMemorySegment(S, c, c0 + VB, LE);
            c02 = FloatVector.fromMemorySegment(S, c, c0 + 2 * VB, LE);
            c03 = FloatVector.fromMemorySegment(S, c, c0 + 3 * VB, LE);
        }
        long a0 = aOff << 2;
        long bRow = bOff << 2;
        long bStep = ldb << 2;
        for (int i = 0; i < k; i++, bRow += bStep) {
            FloatVector x = FloatVector.broadcast(S, a.get(F, a0 + ((long) i << 2)));
            c00 = x.fma(FloatVector.fromMemorySegment(S, b, bRow, LE), c00);
            c01 = x.fma(FloatVector.fromMemorySegment(S, b, bRow + VB, LE), c01);
            c02 = x.fma(FloatVector.fromMemorySegment(S, b, bRow + 2 * VB, LE), c02);
            c03 = x.fma(FloatVector.fromMemorySegment(S, b, bRow + 3 * VB, LE), c03);
        }
        c00.intoMemorySegment(c, c0, LE);
        c01.intoMemorySegment(c, c0 + VB, LE);
        c02.intoMemorySegment(c, c0 + 2 * VB, LE);
        c03.intoMemorySegment(c, c0 + 3 * VB, LE);
    }

    private static void tile1x1(MemorySegment a, long aOff, int k,
                                MemorySegment b, long bOff, long ldb,
                                MemorySegment c, long cOff, boolean accumulate) {
        long c0 = cOff << 2;
        FloatVector c00 = accumulate ? FloatVector.fromMemorySegment(S, c, c0, LE) : FloatVector.zero(S);
        long a0 = aOff << 2;
        long bRow = bOff << 2;
        long bStep = ldb << 2;
        for (int i = 0; i < k; i++, bRow += bStep) {
            FloatVector x = FloatVector.broadcast(S, a.get(F, a0 + ((long) i << 2)));
            c00 = x.fma(FloatVector.fromMemorySegment(S, b, bRow, LE), c00);
        }
        c00.intoMemorySegment(c, c0, LE);
    }

    // ---------------------------------------------------------------- reductions and element-wise kernels
    // Horizontal sums fold the lane accumulators in lane order (0, 1, ..., L-1), the order ScalarKernels uses.

    @Override
    public float sumOfSquares(MemorySegment x, long off, int n) {
        int body = n & -L;
        long base = off << 2;
        FloatVector acc = FloatVector.zero(S);
        for (int i = 0; i < body; i += L) {
            FloatVector v = FloatVector.fromMemorySegment(S, x, base + ((long) i << 2), LE);
            acc = v.fma(v, acc);
        }
        float total = 0f;
        for (int lane = 0; lane < L; lane++) {
            total += acc.lane(lane);
        }
        for (int i = body; i < n; i++) {
            float v = x.get(F, base + ((long) i << 2));
            total = Math.fma(v, v, total);
        }
        return total;
    }

    @Override
    public void rmsnorm(MemorySegment out, long outOff, MemorySegment x, long xOff, MemorySegment w, long wOff,
                        int n, float eps) {
        float inv = RmsNorm.inverseRms(sumOfSquares(x, xOff, n), n, eps);
        int body = n & -L;
        long o = outOff << 2;
        long xb = xOff << 2;
        long wb = wOff << 2;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector xv = FloatVector.fromMemorySegment(S, x, xb + d, LE);
            FloatVector wv = FloatVector.fromMemorySegment(S, w, wb + d, LE);
            wv.mul(xv.mul(inv)).intoMemorySegment(out, o + d, LE);
        }
        for (int i = body; i < n; i++) {
            long d = (long) i << 2;
            out.set(F, o + d, w.get(F, wb + d) * (inv * x.get(F, xb + d)));
        }
    }

    @Override
    public float max(MemorySegment x, long off, int n) {
        int body = n & -L;
        long base = off << 2;
        FloatVector acc = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (int i = 0; i < body; i += L) {
            acc = acc.max(FloatVector.fromMemorySegment(S, x, base + ((long) i << 2), LE));
        }
        float max = Float.NEGATIVE_INFINITY;
        for (int lane = 0; lane < L; lane++) {
            max = Math.max(max, acc.lane(lane));
        }
        for (int i = body; i < n; i++) {
            max = Math.max(max, x.get(F, base + ((long) i << 2)));
        }
        return max;
    }

    @Override
    public void scale(MemorySegment x, long off, int n, float factor) {
        int body = n & -L;
        long base = off << 2;
        for (int i = 0; i < body; i += L) {
            long d = base + ((long) i << 2);
            FloatVector.fromMemorySegment(S, x, d, LE).mul(factor).intoMemorySegment(x, d, LE);
        }
        for (int i = body; i < n; i++) {
            long d = base + ((long) i << 2);
            x.set(F, d, x.get(F, d) * factor);
        }
    }

    @Override
    public float expAndSum(MemorySegment x, long off, int n, float max) {
        int body = n & -L;
        long base = off << 2;
        FloatVector acc = FloatVector.zero(S);
        for (int i = 0; i < body; i += L) {
            long d = base + ((long) i << 2);
            FloatVector v = FloatVector.fromMemorySegment(S, x, d, LE).sub(max);
            // Exp.exp(float), lane-wise, written out (see the class note)
            v = v.max(Exp.LO).min(Exp.HI);
            FloatVector t = v.fma(FloatVector.broadcast(S, Exp.LOG2E), FloatVector.broadcast(S, Exp.ROUNDER));
            FloatVector kn = t.sub(Exp.ROUNDER);
            FloatVector r = kn.fma(FloatVector.broadcast(S, -Exp.LN2_HI), v);
            r = kn.fma(FloatVector.broadcast(S, -Exp.LN2_LO), r);
            FloatVector p = FloatVector.broadcast(S, Exp.P0);
            p = p.fma(r, FloatVector.broadcast(S, Exp.P1));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P2));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P3));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P4));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P5));
            FloatVector y = p.fma(r.mul(r), r).add(1.0f);
            FloatVector pow2n = t.viewAsIntegralLanes().sub(Exp.ROUNDER_BITS - 127)
                    .lanewise(VectorOperators.LSHL, 23).viewAsFloatingLanes();
            FloatVector e = y.mul(pow2n);
            e.intoMemorySegment(x, d, LE);
            acc = acc.add(e);
        }
        float total = 0f;
        for (int lane = 0; lane < L; lane++) {
            total += acc.lane(lane);
        }
        for (int i = body; i < n; i++) {
            long d = base + ((long) i << 2);
            float e = Exp.exp(x.get(F, d) - max);
            x.set(F, d, e);
            total += e;
        }
        return total;
    }

    @Override
    public void divide(MemorySegment x, long off, int n, float divisor) {
        int body = n & -L;
        long base = off << 2;
        for (int i = 0; i < body; i += L) {
            long d = base + ((long) i << 2);
            FloatVector.fromMemorySegment(S, x, d, LE).div(divisor).intoMemorySegment(x, d, LE);
        }
        for (int i = body; i < n; i++) {
            long d = base + ((long) i << 2);
            x.set(F, d, x.get(F, d) / divisor);
        }
    }

    @Override
    public void add(MemorySegment x, long xOff, MemorySegment y, long yOff, int n) {
        int body = n & -L;
        long xb = xOff << 2;
        long yb = yOff << 2;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector xv = FloatVector.fromMemorySegment(S, x, xb + d, LE);
            xv.add(FloatVector.fromMemorySegment(S, y, yb + d, LE)).intoMemorySegment(x, xb + d, LE);
        }
        for (int i = body; i < n; i++) {
            long d = (long) i << 2;
            x.set(F, xb + d, x.get(F, xb + d) + y.get(F, yb + d));
        }
    }

    @Override
    public void swiglu(MemorySegment h, long hOff, MemorySegment g, long gOff, int n) {
        int body = n & -L;
        long hb = hOff << 2;
        long gb = gOff << 2;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector v = FloatVector.fromMemorySegment(S, h, hb + d, LE);
            // Exp.exp(-v), lane-wise, written out (see the class note)
            FloatVector u = v.neg().max(Exp.LO).min(Exp.HI);
            FloatVector t = u.fma(FloatVector.broadcast(S, Exp.LOG2E), FloatVector.broadcast(S, Exp.ROUNDER));
            FloatVector kn = t.sub(Exp.ROUNDER);
            FloatVector r = kn.fma(FloatVector.broadcast(S, -Exp.LN2_HI), u);
            r = kn.fma(FloatVector.broadcast(S, -Exp.LN2_LO), r);
            FloatVector p = FloatVector.broadcast(S, Exp.P0);
            p = p.fma(r, FloatVector.broadcast(S, Exp.P1));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P2));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P3));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P4));
            p = p.fma(r, FloatVector.broadcast(S, Exp.P5));
            FloatVector y = p.fma(r.mul(r), r).add(1.0f);
            FloatVector pow2n = t.viewAsIntegralLanes().sub(Exp.ROUNDER_BITS - 127)
                    .lanewise(VectorOperators.LSHL, 23).viewAsFloatingLanes();
            FloatVector silu = v.div(y.mul(pow2n).add(1.0f));
            silu.mul(FloatVector.fromMemorySegment(S, g, gb + d, LE)).intoMemorySegment(h, hb + d, LE);
        }
        for (int i = body; i < n; i++) {
            long d = (long) i << 2;
            float v = h.get(F, hb + d);
            float silu = v / (Exp.exp(-v) + 1.0f);
            h.set(F, hb + d, silu * g.get(F, gb + d));
        }
    }

    @Override
    public void rope(MemorySegment x, long off, int heads, int headSize, MemorySegment cos, MemorySegment sin,
                     long tableOff) {
        int body = headSize & -L;
        long tb = tableOff << 2;
        for (int h = 0; h < heads; h++) {
            long base = (off + (long) h * headSize) << 2;
            for (int i = 0; i < body; i += L) {
                long d = (long) i << 2;
                FloatVector v = FloatVector.fromMemorySegment(S, x, base + d, LE);
                FloatVector swapped = v.rearrange(SWAP_PAIRS);
                FloatVector c = FloatVector.fromMemorySegment(S, cos, tb + d, LE);
                FloatVector s = FloatVector.fromMemorySegment(S, sin, tb + d, LE);
                v.mul(c).add(swapped.mul(s)).intoMemorySegment(x, base + d, LE);
            }
            for (int i = body; i + 1 < headSize; i += 2) {
                long d = (long) i << 2;
                float x0 = x.get(F, base + d);
                float x1 = x.get(F, base + d + 4);
                x.set(F, base + d, x0 * cos.get(F, tb + d) + x1 * sin.get(F, tb + d));
                x.set(F, base + d + 4, x1 * cos.get(F, tb + d + 4) + x0 * sin.get(F, tb + d + 4));
            }
        }
    }

    // ---------------------------------------------------------------- quantized weights: dot products, dequantize

    static final VectorShuffle<Float> XOR8 = VectorShuffle.fromOp(S, i -> (i ^ 8) & (L - 1));
    static final VectorShuffle<Float> XOR4 = VectorShuffle.fromOp(S, i -> (i ^ 4) & (L - 1));
    static final VectorShuffle<Float> XOR2 = VectorShuffle.fromOp(S, i -> (i ^ 2) & (L - 1));
    static final VectorShuffle<Float> XOR1 = VectorShuffle.fromOp(S, i -> (i ^ 1) & (L - 1));
    static final VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    /** Float vectors per 16 bytes widened (the byte loads are always 128-bit). */
    static final int PARTS = 16 / L;

    /**
     * Tiles of 4 rows of A by 2 rows of B (8 accumulators: prefill), 1 by 4 (decode) and 1 by 1 (edges); the
     * pairwise fold is written out in each (see the class note on vectors crossing method boundaries).
     */
    @Override
    public void dotProducts(MemorySegment a, long aOff, long lda, int rows, int k,
                            MemorySegment b, long bOff, long ldb, int cols,
                            MemorySegment c, long cOff, long ldc) {
        if (L < 4) {
            throw new IllegalStateException("dotProducts needs at least 4 lanes");
        }
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            long ar = aOff + r * lda;
            long cr = cOff + r * ldc;
            int j = 0;
            for (; j + 2 <= cols; j += 2) {
                dotTile4x2(a, ar, lda, k, b, bOff + j * ldb, ldb, c, cr + j, ldc);
            }
            for (; j < cols; j++) {
                for (int i = 0; i < 4; i++) {
                    dotTile1x1(a, ar + i * lda, lda, k, b, bOff + j * ldb, ldb, c, cr + i * ldc + j, ldc);
                }
            }
        }
        for (; r < rows; r++) {
            long ar = aOff + r * lda;
            long cr = cOff + r * ldc;
            int j = 0;
            for (; j + 4 <= cols; j += 4) {
                dotTile1x4(a, ar, lda, k, b, bOff + j * ldb, ldb, c, cr + j, ldc);
            }
            for (; j < cols; j++) {
                dotTile1x1(a, ar, lda, k, b, bOff + j * ldb, ldb, c, cr + j, ldc);
            }
        }
    }

    private static void dotTile4x2(MemorySegment a, long aOff, long lda, int k, MemorySegment b, long bOff, long ldb,
                                 MemorySegment c, long cOff, long ldc) {
        int body = k & -L;
        FloatVector z = FloatVector.zero(S);
        long a0 = (aOff + 0 * lda) << 2;
        long a1 = (aOff + 1 * lda) << 2;
        long a2 = (aOff + 2 * lda) << 2;
        long a3 = (aOff + 3 * lda) << 2;
        long b0 = (bOff + 0 * ldb) << 2;
        long b1 = (bOff + 1 * ldb) << 2;
        FloatVector s00 = z; FloatVector s01 = z; FloatVector s10 = z; FloatVector s11 = z; FloatVector s20 = z; FloatVector s21 = z; FloatVector s30 = z; FloatVector s31 = z;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector x0 = FloatVector.fromMemorySegment(S, a, a0 + d, LE);
            FloatVector x1 = FloatVector.fromMemorySegment(S, a, a1 + d, LE);
            FloatVector x2 = FloatVector.fromMemorySegment(S, a, a2 + d, LE);
            FloatVector x3 = FloatVector.fromMemorySegment(S, a, a3 + d, LE);
            FloatVector w0 = FloatVector.fromMemorySegment(S, b, b0 + d, LE);
            FloatVector w1 = FloatVector.fromMemorySegment(S, b, b1 + d, LE);
            s00 = x0.fma(w0, s00);
            s01 = x0.fma(w1, s01);
            s10 = x1.fma(w0, s10);
            s11 = x1.fma(w1, s11);
            s20 = x2.fma(w0, s20);
            s21 = x2.fma(w1, s21);
            s30 = x3.fma(w0, s30);
            s31 = x3.fma(w1, s31);
        }
        if (L >= 16) { s00 = s00.add(s00.rearrange(XOR8)); }
        if (L >= 8) { s00 = s00.add(s00.rearrange(XOR4)); }
        s00 = s00.add(s00.rearrange(XOR2));
        s00 = s00.add(s00.rearrange(XOR1));
        float t00 = s00.lane(0);
        for (int i = body; i < k; i++) {
            t00 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t00);
        }
        c.set(F, (cOff + 0 * ldc + 0) << 2, t00);
        if (L >= 16) { s01 = s01.add(s01.rearrange(XOR8)); }
        if (L >= 8) { s01 = s01.add(s01.rearrange(XOR4)); }
        s01 = s01.add(s01.rearrange(XOR2));
        s01 = s01.add(s01.rearrange(XOR1));
        float t01 = s01.lane(0);
        for (int i = body; i < k; i++) {
            t01 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b1 + ((long) i << 2)), t01);
        }
        c.set(F, (cOff + 0 * ldc + 1) << 2, t01);
        if (L >= 16) { s10 = s10.add(s10.rearrange(XOR8)); }
        if (L >= 8) { s10 = s10.add(s10.rearrange(XOR4)); }
        s10 = s10.add(s10.rearrange(XOR2));
        s10 = s10.add(s10.rearrange(XOR1));
        float t10 = s10.lane(0);
        for (int i = body; i < k; i++) {
            t10 = Math.fma(a.get(F, a1 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t10);
        }
        c.set(F, (cOff + 1 * ldc + 0) << 2, t10);
        if (L >= 16) { s11 = s11.add(s11.rearrange(XOR8)); }
        if (L >= 8) { s11 = s11.add(s11.rearrange(XOR4)); }
        s11 = s11.add(s11.rearrange(XOR2));
        s11 = s11.add(s11.rearrange(XOR1));
        float t11 = s11.lane(0);
        for (int i = body; i < k; i++) {
            t11 = Math.fma(a.get(F, a1 + ((long) i << 2)), b.get(F, b1 + ((long) i << 2)), t11);
        }
        c.set(F, (cOff + 1 * ldc + 1) << 2, t11);
        if (L >= 16) { s20 = s20.add(s20.rearrange(XOR8)); }
        if (L >= 8) { s20 = s20.add(s20.rearrange(XOR4)); }
        s20 = s20.add(s20.rearrange(XOR2));
        s20 = s20.add(s20.rearrange(XOR1));
        float t20 = s20.lane(0);
        for (int i = body; i < k; i++) {
            t20 = Math.fma(a.get(F, a2 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t20);
        }
        c.set(F, (cOff + 2 * ldc + 0) << 2, t20);
        if (L >= 16) { s21 = s21.add(s21.rearrange(XOR8)); }
        if (L >= 8) { s21 = s21.add(s21.rearrange(XOR4)); }
        s21 = s21.add(s21.rearrange(XOR2));
        s21 = s21.add(s21.rearrange(XOR1));
        float t21 = s21.lane(0);
        for (int i = body; i < k; i++) {
            t21 = Math.fma(a.get(F, a2 + ((long) i << 2)), b.get(F, b1 + ((long) i << 2)), t21);
        }
        c.set(F, (cOff + 2 * ldc + 1) << 2, t21);
        if (L >= 16) { s30 = s30.add(s30.rearrange(XOR8)); }
        if (L >= 8) { s30 = s30.add(s30.rearrange(XOR4)); }
        s30 = s30.add(s30.rearrange(XOR2));
        s30 = s30.add(s30.rearrange(XOR1));
        float t30 = s30.lane(0);
        for (int i = body; i < k; i++) {
            t30 = Math.fma(a.get(F, a3 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t30);
        }
        c.set(F, (cOff + 3 * ldc + 0) << 2, t30);
        if (L >= 16) { s31 = s31.add(s31.rearrange(XOR8)); }
        if (L >= 8) { s31 = s31.add(s31.rearrange(XOR4)); }
        s31 = s31.add(s31.rearrange(XOR2));
        s31 = s31.add(s31.rearrange(XOR1));
        float t31 = s31.lane(0);
        for (int i = body; i < k; i++) {
            t31 = Math.fma(a.get(F, a3 + ((long) i << 2)), b.get(F, b1 + ((long) i << 2)), t31);
        }
        c.set(F, (cOff + 3 * ldc + 1) << 2, t31);
    }

    private static void dotTile1x4(MemorySegment a, long aOff, long lda, int k, MemorySegment b, long bOff, long ldb,
                                 MemorySegment c, long cOff, long ldc) {
        int body = k & -L;
        FloatVector z = FloatVector.zero(S);
        long a0 = (aOff + 0 * lda) << 2;
        long b0 = (bOff + 0 * ldb) << 2;
        long b1 = (bOff + 1 * ldb) << 2;
        long b2 = (bOff + 2 * ldb) << 2;
        long b3 = (bOff + 3 * ldb) << 2;
        FloatVector s00 = z; FloatVector s01 = z; FloatVector s02 = z; FloatVector s03 = z;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector x0 = FloatVector.fromMemorySegment(S, a, a0 + d, LE);
            FloatVector w0 = FloatVector.fromMemorySegment(S, b, b0 + d, LE);
            FloatVector w1 = FloatVector.fromMemorySegment(S, b, b1 + d, LE);
            FloatVector w2 = FloatVector.fromMemorySegment(S, b, b2 + d, LE);
            FloatVector w3 = FloatVector.fromMemorySegment(S, b, b3 + d, LE);
            s00 = x0.fma(w0, s00);
            s01 = x0.fma(w1, s01);
            s02 = x0.fma(w2, s02);
            s03 = x0.fma(w3, s03);
        }
        if (L >= 16) { s00 = s00.add(s00.rearrange(XOR8)); }
        if (L >= 8) { s00 = s00.add(s00.rearrange(XOR4)); }
        s00 = s00.add(s00.rearrange(XOR2));
        s00 = s00.add(s00.rearrange(XOR1));
        float t00 = s00.lane(0);
        for (int i = body; i < k; i++) {
            t00 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t00);
        }
        c.set(F, (cOff + 0 * ldc + 0) << 2, t00);
        if (L >= 16) { s01 = s01.add(s01.rearrange(XOR8)); }
        if (L >= 8) { s01 = s01.add(s01.rearrange(XOR4)); }
        s01 = s01.add(s01.rearrange(XOR2));
        s01 = s01.add(s01.rearrange(XOR1));
        float t01 = s01.lane(0);
        for (int i = body; i < k; i++) {
            t01 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b1 + ((long) i << 2)), t01);
        }
        c.set(F, (cOff + 0 * ldc + 1) << 2, t01);
        if (L >= 16) { s02 = s02.add(s02.rearrange(XOR8)); }
        if (L >= 8) { s02 = s02.add(s02.rearrange(XOR4)); }
        s02 = s02.add(s02.rearrange(XOR2));
        s02 = s02.add(s02.rearrange(XOR1));
        float t02 = s02.lane(0);
        for (int i = body; i < k; i++) {
            t02 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b2 + ((long) i << 2)), t02);
        }
        c.set(F, (cOff + 0 * ldc + 2) << 2, t02);
        if (L >= 16) { s03 = s03.add(s03.rearrange(XOR8)); }
        if (L >= 8) { s03 = s03.add(s03.rearrange(XOR4)); }
        s03 = s03.add(s03.rearrange(XOR2));
        s03 = s03.add(s03.rearrange(XOR1));
        float t03 = s03.lane(0);
        for (int i = body; i < k; i++) {
            t03 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b3 + ((long) i << 2)), t03);
        }
        c.set(F, (cOff + 0 * ldc + 3) << 2, t03);
    }

    private static void dotTile1x1(MemorySegment a, long aOff, long lda, int k, MemorySegment b, long bOff, long ldb,
                                 MemorySegment c, long cOff, long ldc) {
        int body = k & -L;
        FloatVector z = FloatVector.zero(S);
        long a0 = (aOff + 0 * lda) << 2;
        long b0 = (bOff + 0 * ldb) << 2;
        FloatVector s00 = z;
        for (int i = 0; i < body; i += L) {
            long d = (long) i << 2;
            FloatVector x0 = FloatVector.fromMemorySegment(S, a, a0 + d, LE);
            FloatVector w0 = FloatVector.fromMemorySegment(S, b, b0 + d, LE);
            s00 = x0.fma(w0, s00);
        }
        if (L >= 16) { s00 = s00.add(s00.rearrange(XOR8)); }
        if (L >= 8) { s00 = s00.add(s00.rearrange(XOR4)); }
        s00 = s00.add(s00.rearrange(XOR2));
        s00 = s00.add(s00.rearrange(XOR1));
        float t00 = s00.lane(0);
        for (int i = body; i < k; i++) {
            t00 = Math.fma(a.get(F, a0 + ((long) i << 2)), b.get(F, b0 + ((long) i << 2)), t00);
        }
        c.set(F, (cOff + 0 * ldc + 0) << 2, t00);
    }

    /**
     * One private method per block type: as one method with every type's loop, a model that mixes two types (Q4_K_M
     * holds Q4_K and Q6_K matrices; llama.cpp's Q4_0 keeps a Q6_K output head) made both branches hot, C2 ran past
     * its node budget inlining the vector calls, and the Q4_0 loop ran four times slower.
     */
    @Override
    public void dequantize(GgmlType type, MemorySegment src, long srcByteOff, int n, MemorySegment dst, long dstOff) {
        Dequant.requireSupported(type, n);
        int blocks = n / type.blockSize();
        long y = dstOff << 2;
        switch (type) {
            case Q8_0 -> dequantizeQ8_0(src, srcByteOff, blocks, dst, y);
            case Q4_0 -> dequantizeQ4_0(src, srcByteOff, blocks, dst, y);
            case Q4_K -> dequantizeQ4_K(src, srcByteOff, blocks, dst, y);
            case Q6_K -> dequantizeQ6_K(src, srcByteOff, blocks, dst, y);
            // Load-time only (F16/BF16 weights are widened once): the scalar conversion, which is exact.
            default -> Dequant.blocks(type, src, srcByteOff, 0, blocks, dst, dstOff);
        }
    }

    private static void dequantizeQ8_0(MemorySegment src, long srcByteOff, int blocks, MemorySegment dst, long y) {
        for (int blk = 0; blk < blocks; blk++, y += 32 * 4) {
            long base = srcByteOff + 34L * blk;
            float d = Dequant.f16(src, base);
            for (int half = 0; half < 2; half++) {
                ByteVector q = ByteVector.fromMemorySegment(B16, src, base + 2 + 16 * half, LE);
                for (int part = 0; part < PARTS; part++) {
                    ((FloatVector) q.convertShape(VectorOperators.B2F, S, part)).mul(d)
                            .intoMemorySegment(dst, y + 4L * (16 * half + part * L), LE);
                }
            }
        }
    }

    private static void dequantizeQ4_0(MemorySegment src, long srcByteOff, int blocks, MemorySegment dst, long y) {
        for (int blk = 0; blk < blocks; blk++, y += 32 * 4) {
            long base = srcByteOff + 18L * blk;
            float d = Dequant.f16(src, base);
            ByteVector q = ByteVector.fromMemorySegment(B16, src, base + 2, LE);
            ByteVector lo = q.and((byte) 0x0F).sub((byte) 8);
            ByteVector hi = q.lanewise(VectorOperators.LSHR, 4).sub((byte) 8);
            for (int part = 0; part < PARTS; part++) {
                ((FloatVector) lo.convertShape(VectorOperators.B2F, S, part)).mul(d)
                        .intoMemorySegment(dst, y + 4L * (part * L), LE);
                ((FloatVector) hi.convertShape(VectorOperators.B2F, S, part)).mul(d)
                        .intoMemorySegment(dst, y + 4L * (16 + part * L), LE);
            }
        }
    }

    private static void dequantizeQ4_K(MemorySegment src, long srcByteOff, int blocks, MemorySegment dst, long y) {
        for (int blk = 0; blk < blocks; blk++, y += 256 * 4) {
            long base = srcByteOff + 144L * blk;
            float d = Dequant.f16(src, base);
            float min = Dequant.f16(src, base + 2);
            for (int j = 0, is = 0; j < 256; j += 64, is += 2) {
                float d1 = d * Dequant.scaleMinK4(src, base + 4, is, 0);
                float m1 = min * Dequant.scaleMinK4(src, base + 4, is, 1);
                float d2 = d * Dequant.scaleMinK4(src, base + 4, is + 1, 0);
                float m2 = min * Dequant.scaleMinK4(src, base + 4, is + 1, 1);
                long qs = base + 16 + j / 2;
                for (int half = 0; half < 2; half++) {
                    ByteVector q = ByteVector.fromMemorySegment(B16, src, qs + 16 * half, LE);
                    ByteVector lo = q.and((byte) 0x0F);
                    ByteVector hi = q.lanewise(VectorOperators.LSHR, 4);
                    for (int part = 0; part < PARTS; part++) {
                        int e = 16 * half + part * L;
                        ((FloatVector) lo.convertShape(VectorOperators.B2F, S, part)).mul(d1).sub(m1)
                                .intoMemorySegment(dst, y + 4L * (j + e), LE);
                        ((FloatVector) hi.convertShape(VectorOperators.B2F, S, part)).mul(d2).sub(m2)
                                .intoMemorySegment(dst, y + 4L * (j + 32 + e), LE);
                    }
                }
            }
        }
    }

    private static void dequantizeQ6_K(MemorySegment src, long srcByteOff, int blocks, MemorySegment dst, long y) {
        for (int blk = 0; blk < blocks; blk++, y += 256 * 4) {
            long base = srcByteOff + 210L * blk;
            float d = Dequant.f16(src, base + 208);
            for (int n0 = 0; n0 < 256; n0 += 128) {
                long ql = base + n0 / 2;
                long qh = base + 128 + n0 / 4;
                long sc = base + 192 + n0 / 16;
                for (int l0 = 0; l0 < 32; l0 += 16) {
                    int is = l0 / 16;
                    ByteVector qa = ByteVector.fromMemorySegment(B16, src, ql + l0, LE);
                    ByteVector qb = ByteVector.fromMemorySegment(B16, src, ql + 32 + l0, LE);
                    ByteVector h = ByteVector.fromMemorySegment(B16, src, qh + l0, LE);
                    ByteVector q1 = qa.and((byte) 0x0F).or(h.and((byte) 3).lanewise(VectorOperators.LSHL, 4))
                            .sub((byte) 32);
                    ByteVector q2 = qb.and((byte) 0x0F).or(h.lanewise(VectorOperators.LSHR, 2).and((byte) 3)
                            .lanewise(VectorOperators.LSHL, 4)).sub((byte) 32);
                    ByteVector q3 = qa.lanewise(VectorOperators.LSHR, 4).or(h.lanewise(VectorOperators.LSHR, 4)
                            .and((byte) 3).lanewise(VectorOperators.LSHL, 4)).sub((byte) 32);
                    ByteVector q4 = qb.lanewise(VectorOperators.LSHR, 4).or(h.lanewise(VectorOperators.LSHR, 6)
                            .and((byte) 3).lanewise(VectorOperators.LSHL, 4)).sub((byte) 32);
                    float s1 = d * src.get(ValueLayout.JAVA_BYTE, sc + is);
                    float s2 = d * src.get(ValueLayout.JAVA_BYTE, sc + is + 2);
                    float s3 = d * src.get(ValueLayout.JAVA_BYTE, sc + is + 4);
                    float s4 = d * src.get(ValueLayout.JAVA_BYTE, sc + is + 6);
                    long o = y + 4L * (n0 + l0);
                    for (int part = 0; part < PARTS; part++) {
                        long p = o + 4L * part * L;
                        ((FloatVector) q1.convertShape(VectorOperators.B2F, S, part)).mul(s1)
                                .intoMemorySegment(dst, p, LE);
                        ((FloatVector) q2.convertShape(VectorOperators.B2F, S, part)).mul(s2)
                                .intoMemorySegment(dst, p + 4 * 32, LE);
                        ((FloatVector) q3.convertShape(VectorOperators.B2F, S, part)).mul(s3)
                                .intoMemorySegment(dst, p + 4 * 64, LE);
                        ((FloatVector) q4.convertShape(VectorOperators.B2F, S, part)).mul(s4)
                                .intoMemorySegment(dst, p + 4 * 96, LE);
                    }
                }
            }
        }
    }

    /**
     * Q8_0 and Q4_0 fused: each block's quants are widened, scaled by {@code d} (the same multiply the dequantizer
     * does) and multiplied into the lane accumulator in element order, so the result equals the dequantize-then-
     * {@code dotProducts} path bit for bit. The fold is written out (see the class note).
     */
    @Override
    public float dotQuantized(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment x, long xOff) {
        if (type != GgmlType.Q8_0 && type != GgmlType.Q4_0) {
            MemorySegment row = MemorySegment.ofArray(new float[k]);
            dequantize(type, w, wOff, k, row, 0);
            MemorySegment out = MemorySegment.ofArray(new float[1]);
            dotProducts(x, xOff, k, 1, k, row, 0, k, 1, out, 0, 1);
            return out.get(F, 0);
        }
        Dequant.requireSupported(type, k);
        FloatVector acc = FloatVector.zero(S);
        long xb = xOff << 2;
        int blocks = k / 32;
        if (type == GgmlType.Q8_0) {
            for (int blk = 0; blk < blocks; blk++, xb += 32 * 4) {
                long base = wOff + 34L * blk;
                float d = Dequant.f16(w, base);
                ByteVector q0 = ByteVector.fromMemorySegment(B16, w, base + 2, LE);
                ByteVector q1 = ByteVector.fromMemorySegment(B16, w, base + 18, LE);
                for (int part = 0; part < PARTS; part++) {
                    FloatVector wv = ((FloatVector) q0.convertShape(VectorOperators.B2F, S, part)).mul(d);
                    acc = FloatVector.fromMemorySegment(S, x, xb + 4L * part * L, LE).fma(wv, acc);
                }
                for (int part = 0; part < PARTS; part++) {
                    FloatVector wv = ((FloatVector) q1.convertShape(VectorOperators.B2F, S, part)).mul(d);
                    acc = FloatVector.fromMemorySegment(S, x, xb + 4L * (16 + part * L), LE).fma(wv, acc);
                }
            }
        } else {
            for (int blk = 0; blk < blocks; blk++, xb += 32 * 4) {
                long base = wOff + 18L * blk;
                float d = Dequant.f16(w, base);
                ByteVector q = ByteVector.fromMemorySegment(B16, w, base + 2, LE);
                ByteVector lo = q.and((byte) 0x0F).sub((byte) 8);
                ByteVector hi = q.lanewise(VectorOperators.LSHR, 4).sub((byte) 8);
                for (int part = 0; part < PARTS; part++) {
                    FloatVector wv = ((FloatVector) lo.convertShape(VectorOperators.B2F, S, part)).mul(d);
                    acc = FloatVector.fromMemorySegment(S, x, xb + 4L * part * L, LE).fma(wv, acc);
                }
                for (int part = 0; part < PARTS; part++) {
                    FloatVector wv = ((FloatVector) hi.convertShape(VectorOperators.B2F, S, part)).mul(d);
                    acc = FloatVector.fromMemorySegment(S, x, xb + 4L * (16 + part * L), LE).fma(wv, acc);
                }
            }
        }
        if (L >= 16) {
            acc = acc.add(acc.rearrange(XOR8));
        }
        if (L >= 8) {
            acc = acc.add(acc.rearrange(XOR4));
        }
        acc = acc.add(acc.rearrange(XOR2));
        acc = acc.add(acc.rearrange(XOR1));
        return acc.lane(0);
    }

    // ---------------------------------------------------------------- fused decode by table lookup (Q4_0, Q4_K)

    /** Lanes {@code i - 8} (Q4_0's quant values), as floats. */
    private static final FloatVector NIBBLES_M8 = tableBase(-8);
    /** Lanes {@code i} (Q4_K's quant values), as floats. */
    private static final FloatVector NIBBLES = tableBase(0);
    private static final VectorSpecies<Integer> I16 = IntVector.SPECIES_512;
    private static final VectorSpecies<Long> L2 = LongVector.SPECIES_128;
    /** Lanes 8–15 of a Q4_K block's scale vector hold the minimums. */
    private static final VectorMask<Float> UPPER_EIGHT = VectorMask.fromLong(S, L == 16 ? 0xFF00L : 0L);
    /** Per thread: a Q4_K block's eight scales and eight minimums for each row of a pair, as floats. */
    private static final ThreadLocal<float[]> Q4_K_SCALES = ThreadLocal.withInitial(() -> new float[32]);

    private static FloatVector tableBase(int first) {
        float[] v = new float[L];
        for (int i = 0; i < L; i++) {
            v[i] = first + (i & 15);
        }
        return FloatVector.fromArray(S, v, 0);
    }

    /**
     * Q4_0 and Q4_K at 16 lanes: per block (Q4_0) or 32-element sub-block (Q4_K) the sixteen values a nibble can
     * dequantize to are one vector (Q4_0 {@code d·(i − 8)}, Q4_K {@code d·sc·i − dmin·m}, each exactly the float
     * ggml's dequantizer computes), and each 16 nibbles, widened to int lanes, pick theirs with one permute
     * ({@code selectFrom}, {@code vpermd}) before the FMA. That replaces the per-weight conversion and multiply of
     * the dequantize-then-multiply loop by one permute, so the result is {@link #dotQuantized}'s bit for bit, and
     * it costs fewer instructions per weight than the integer kernels' widening multiplies. Other types and widths
     * take two {@link #dotQuantized} calls.
     */
    @Override
    public void dotQuantizedPair(GgmlType type, MemorySegment w, long wOff0, long wOff1, int k, MemorySegment x,
                                 long xOff, MemorySegment c, long c0, long c1) {
        if (!Kernels.tableDecode(type, L)) {
            Kernels.super.dotQuantizedPair(type, w, wOff0, wOff1, k, x, xOff, c, c0, c1);
            return;
        }
        Dequant.requireSupported(type, k);
        if (type == GgmlType.Q4_0) {
            q4_0TablePair(w, wOff0, wOff1, k, x, xOff << 2, c, c0, c1);
        } else {
            q4_KTablePair(w, wOff0, wOff1, k, x, xOff << 2, c, c0, c1, Q4_K_SCALES.get());
        }
    }

    private static void q4_0TablePair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment x, long xb,
                                      MemorySegment c, long c0, long c1) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        for (int b = 0; b < k / 32; b++) {
            long base0 = wOff0 + 18L * b;
            long base1 = wOff1 + 18L * b;
            IntVector t0 = NIBBLES_M8.mul(Dequant.f16(w, base0)).reinterpretAsInts();
            IntVector t1 = NIBBLES_M8.mul(Dequant.f16(w, base1)).reinterpretAsInts();
            IntVector q = (IntVector) ByteVector.fromMemorySegment(B16, w, base0 + 2, LE)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
            IntVector r = (IntVector) ByteVector.fromMemorySegment(B16, w, base1 + 2, LE)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
            FloatVector lo = FloatVector.fromMemorySegment(S, x, xb + 128L * b, LE);
            FloatVector hi = FloatVector.fromMemorySegment(S, x, xb + 128L * b + 64, LE);
            acc0 = q.and(15).selectFrom(t0).reinterpretAsFloats().fma(lo, acc0);
            acc1 = r.and(15).selectFrom(t1).reinterpretAsFloats().fma(lo, acc1);
            acc0 = q.lanewise(VectorOperators.LSHR, 4).selectFrom(t0).reinterpretAsFloats().fma(hi, acc0);
            acc1 = r.lanewise(VectorOperators.LSHR, 4).selectFrom(t1).reinterpretAsFloats().fma(hi, acc1);
        }
        c.set(F, c0 << 2, fold(acc0));
        c.set(F, c1 << 2, fold(acc1));
    }

    /**
     * Q4_K pair: per block, each row's eight {@code d·sc_j} (lanes 0–7) and eight {@code dmin·m_j} (lanes 8–15)
     * are computed as one vector — the twelve scale bytes unpacked as ggml's {@code get_scale_min_k4} does into
     * one 128-bit vector, widened, converted and multiplied by {@code (d, …, d, dmin, …, dmin)} — and stored to
     * {@code scales} (16 floats a row), from where each sub-block's table broadcasts them. The elements of a
     * 64-element group come as bytes 0–15 low nibbles, 16–31 low, 0–15 high, 16–31 high (element order). The
     * unpacking is written into the loop: as a helper method it pushed the vector calls past C2's inlining depth
     * (3.4 instead of 2.4 ns per 32 weights).
     */
    private static void q4_KTablePair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment x, long xb,
                                      MemorySegment c, long c0, long c1, float[] scales) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        for (int b = 0; b < k / 256; b++) {
            long base0 = wOff0 + 144L * b;
            long base1 = wOff1 + 144L * b;
            for (int row = 0; row < 2; row++) {
                long base = row == 0 ? base0 : base1;
                int u0 = w.get(Q8Activations.I, base + 4);
                int u1 = w.get(Q8Activations.I, base + 8);
                int u2 = w.get(Q8Activations.I, base + 12);
                long sc = (u0 & 0x3F3F3F3FL)
                        | ((long) ((u2 & 0x0F0F0F0F) | (((u0 >>> 6) & 0x03030303) << 4)) << 32);
                long mins = (u1 & 0x3F3F3F3FL)
                        | ((long) (((u2 >>> 4) & 0x0F0F0F0F) | (((u1 >>> 6) & 0x03030303) << 4)) << 32);
                IntVector packed = (IntVector) LongVector.zero(L2).withLane(0, sc).withLane(1, mins)
                        .reinterpretAsBytes().convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
                FloatVector d = FloatVector.broadcast(S, Dequant.f16(w, base))
                        .blend(Dequant.f16(w, base + 2), UPPER_EIGHT);
                ((FloatVector) packed.convert(VectorOperators.I2F, 0)).mul(d).intoArray(scales, 16 * row);
            }
            for (int j = 0; j < 4; j++) {
                IntVector lo0 = NIBBLES.mul(scales[2 * j]).sub(scales[8 + 2 * j]).reinterpretAsInts();
                IntVector hi0 = NIBBLES.mul(scales[2 * j + 1]).sub(scales[9 + 2 * j]).reinterpretAsInts();
                IntVector lo1 = NIBBLES.mul(scales[16 + 2 * j]).sub(scales[24 + 2 * j]).reinterpretAsInts();
                IntVector hi1 = NIBBLES.mul(scales[17 + 2 * j]).sub(scales[25 + 2 * j]).reinterpretAsInts();
                long qs = 16 + 32L * j;
                IntVector qa = (IntVector) ByteVector.fromMemorySegment(B16, w, base0 + qs, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
                IntVector qb = (IntVector) ByteVector.fromMemorySegment(B16, w, base0 + qs + 16, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
                IntVector ra = (IntVector) ByteVector.fromMemorySegment(B16, w, base1 + qs, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
                IntVector rb = (IntVector) ByteVector.fromMemorySegment(B16, w, base1 + qs + 16, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I16, 0);
                long e = xb + 1024L * b + 256L * j;
                FloatVector x0 = FloatVector.fromMemorySegment(S, x, e, LE);
                FloatVector x1 = FloatVector.fromMemorySegment(S, x, e + 64, LE);
                FloatVector x2 = FloatVector.fromMemorySegment(S, x, e + 128, LE);
                FloatVector x3 = FloatVector.fromMemorySegment(S, x, e + 192, LE);
                acc0 = qa.and(15).selectFrom(lo0).reinterpretAsFloats().fma(x0, acc0);
                acc1 = ra.and(15).selectFrom(lo1).reinterpretAsFloats().fma(x0, acc1);
                acc0 = qb.and(15).selectFrom(lo0).reinterpretAsFloats().fma(x1, acc0);
                acc1 = rb.and(15).selectFrom(lo1).reinterpretAsFloats().fma(x1, acc1);
                acc0 = qa.lanewise(VectorOperators.LSHR, 4).selectFrom(hi0).reinterpretAsFloats().fma(x2, acc0);
                acc1 = ra.lanewise(VectorOperators.LSHR, 4).selectFrom(hi1).reinterpretAsFloats().fma(x2, acc1);
                acc0 = qb.lanewise(VectorOperators.LSHR, 4).selectFrom(hi0).reinterpretAsFloats().fma(x3, acc0);
                acc1 = rb.lanewise(VectorOperators.LSHR, 4).selectFrom(hi1).reinterpretAsFloats().fma(x3, acc1);
            }
        }
        c.set(F, c0 << 2, fold(acc0));
        c.set(F, c1 << 2, fold(acc1));
    }

    // ---------------------------------------------------------------- integer dot products (quantized weights)

    /** Whether the integer kernels have a vector body at this width (16 or 8 lanes); else the scalar twin runs. */
    static final boolean INT_DOT = L == 16 || L == 8;
    /** Chunks of {@code L} elements in each 16-element half-block. */
    static final int IPARTS = INT_DOT ? 16 / L : 1;
    /** {@code L} weight bytes, widened to {@code L} shorts, whose products widen to {@code L} ints. */
    static final VectorSpecies<Byte> BQ = L == 16 ? ByteVector.SPECIES_128 : ByteVector.SPECIES_64;
    static final VectorSpecies<Short> SQ = L == 16 ? ShortVector.SPECIES_256 : ShortVector.SPECIES_128;
    /**
     * {@code L} int lanes: the float species' shape, whatever the platform prefers (a width forced with
     * {@value Kernels#VECTOR_BITS_PROPERTY} above the preferred one must still convert {@code L} shorts to {@code L}
     * ints, or the conversion's species does not match the float lanes it feeds).
     */
    static final VectorSpecies<Integer> IS = L == 16 ? IntVector.SPECIES_512
            : L == 8 ? IntVector.SPECIES_256 : IntVector.SPECIES_128;
    private static final ScalarKernels TWIN = new ScalarKernels(L);

    /**
     * The integer dot products (see {@link Kernels#dotQ8} for the exact definition both twins compute). Weight
     * quants are widened to shorts lane for lane ({@code L} elements per chunk), multiplied by the activation
     * quants (stored as shorts, so they load as they are), the two 16-element halves of a 32-element group added
     * in short lanes (no overflow: |q·a| ≤ 128·127), widened to ints, scaled by the sub-block scale in int lanes
     * for the K-quants, converted to float once per block and multiplied into the lane accumulators. Tiles of
     * four activation rows decode each weight block once for all of them (prefill; the K-quants go row by row,
     * see below); decode uses the one-row tile.
     */
    @Override
    public void dotQ8(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff, long qaStride,
                      int rows, MemorySegment c, long cOff, long ldc) {
        Q8Activations.requireSupported(type, k);
        if (!INT_DOT) {
            TWIN.dotQ8(type, w, wOff, k, qa, qaOff, qaStride, rows, c, cOff, ldc);
            return;
        }
        int r = 0;
        // The K-quants go row by row: their multi-row tiles exceed C2's node budget for inlining the vector
        // operations inside the forward (a four-row Q4_K tile, even a two-row Q6_K one), which then boxes every
        // vector and runs tens of times slower.
        boolean tiles = type == GgmlType.Q8_0 || type == GgmlType.Q4_0;
        for (; r + 4 <= rows && tiles; r += 4) {
            long a = qaOff + r * qaStride;
            long o = cOff + r * ldc;
            switch (type) {
                case Q8_0 -> q8_0Rows4(w, wOff, k, qa, a, qaStride, c, o, ldc);
                case Q4_0 -> q4_0Rows4(w, wOff, k, qa, a, qaStride, c, o, ldc);
                default -> throw new IllegalArgumentException("no integer dot product for ggml type " + type);
            }
        }
        for (; r < rows; r++) {
            long a = qaOff + r * qaStride;
            long o = cOff + r * ldc;
            switch (type) {
                case Q8_0 -> q8_0Rows1(w, wOff, k, qa, a, qaStride, c, o, ldc);
                case Q4_0 -> q4_0Rows1(w, wOff, k, qa, a, qaStride, c, o, ldc);
                case Q4_K -> q4_KRows1(w, wOff, k, qa, a, qaStride, c, o, ldc);
                case Q6_K -> q6_KRows1(w, wOff, k, qa, a, qaStride, c, o, ldc);
                default -> throw new IllegalArgumentException("no integer dot product for ggml type " + type);
            }
        }
    }

    /**
     * Two weight rows against one activation row, each row's arithmetic exactly that of its one-row kernel (same
     * lanes, same order), so the results are bit-identical to two one-row calls. The two rows' loads interleave:
     * two memory streams in flight, and each activation vector loaded once for both.
     */
    @Override
    public void dotQ8Pair(GgmlType type, MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa,
                          long qaOff, MemorySegment c, long c0, long c1) {
        Q8Activations.requireSupported(type, k);
        if (!INT_DOT) {
            TWIN.dotQ8Pair(type, w, wOff0, wOff1, k, qa, qaOff, c, c0, c1);
            return;
        }
        switch (type) {
            case Q8_0 -> q8_0Pair(w, wOff0, wOff1, k, qa, qaOff, c, c0, c1);
            case Q4_0 -> q4_0Pair(w, wOff0, wOff1, k, qa, qaOff, c, c0, c1);
            case Q4_K -> q4_KPair(w, wOff0, wOff1, k, qa, qaOff, c, c0, c1);
            case Q6_K -> q6_KPair(w, wOff0, wOff1, k, qa, qaOff, c, c0, c1);
            default -> throw new IllegalArgumentException("no integer dot product for ggml type " + type);
        }
    }

    private static float fold(FloatVector acc) {
        if (L >= 16) {
            acc = acc.add(acc.rearrange(XOR8));
        }
        acc = acc.add(acc.rearrange(XOR4));
        acc = acc.add(acc.rearrange(XOR2));
        acc = acc.add(acc.rearrange(XOR1));
        return acc.lane(0);
    }

    // The pairs spell every vector operation out, as the one-row kernels do: a helper method per step would push
    // the Vector API's own call chains past C2's inlining depth, and a vector that is not inlined is boxed (many
    // times slower).
    private static void q8_0Pair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa, long a0,
                                 MemorySegment c, long c0, long c1) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        IntVector zi = IntVector.zero(IS);
        for (int b = 0; b < k / 32; b++) {
            long base0 = wOff0 + 34L * b;
            long base1 = wOff1 + 34L * b;
            float da = qa.get(F, a0 + Q8Activations.scaleOffset(k, b));
            float dw0 = Dequant.f16(w, base0);
            float dw1 = Dequant.f16(w, base1);
            IntVector i0 = zi;
            IntVector i1 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector x0 = ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE);
                ShortVector x1 = ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE);
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + 18 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector v0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector v1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + 18 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector p0 = w0.mul(x0).add(w1.mul(x1));
                ShortVector p1 = v0.mul(x0).add(v1.mul(x1));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
                i1 = i1.add((IntVector) p1.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw0 * da), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw1 * da), acc1);
        }
        c.set(F, c0 << 2, fold(acc0));
        c.set(F, c1 << 2, fold(acc1));
    }

    private static void q4_0Pair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa, long a0,
                                 MemorySegment c, long c0, long c1) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        IntVector zi = IntVector.zero(IS);
        for (int b = 0; b < k / 32; b++) {
            long base0 = wOff0 + 18L * b;
            long base1 = wOff1 + 18L * b;
            float da = qa.get(F, a0 + Q8Activations.scaleOffset(k, b));
            float dw0 = Dequant.f16(w, base0);
            float dw1 = Dequant.f16(w, base1);
            IntVector i0 = zi;
            IntVector i1 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector x0 = ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE);
                ShortVector x1 = ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE);
                ShortVector q = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector r = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector p0 = q.and((short) 0x0F).sub((short) 8).mul(x0)
                        .add(q.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).sub((short) 8).mul(x1));
                ShortVector p1 = r.and((short) 0x0F).sub((short) 8).mul(x0)
                        .add(r.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).sub((short) 8).mul(x1));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
                i1 = i1.add((IntVector) p1.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw0 * da), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw1 * da), acc1);
        }
        c.set(F, c0 << 2, fold(acc0));
        c.set(F, c1 << 2, fold(acc1));
    }

    private static void q4_KPair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa, long a0,
                                 MemorySegment c, long c0, long c1) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        IntVector zi = IntVector.zero(IS);
        float m0 = 0f;
        float m1 = 0f;
        for (int b = 0; b < k / 256; b++) {
            long base0 = wOff0 + 144L * b;
            long base1 = wOff1 + 144L * b;
            float da = qa.get(F, a0 + Q8Activations.scaleOffset(k, b));
            long sums = a0 + Q8Activations.sumOffset(k, 8 * b);
            // ggml's unpacking of the twelve scale bytes, as in q4_KRows1: (s0, s1) the scales, (n0, n1) the mins.
            int u0 = w.get(Q8Activations.I, base0 + 4);
            int u1 = w.get(Q8Activations.I, base0 + 8);
            int u2 = w.get(Q8Activations.I, base0 + 12);
            int n1 = ((u2 >>> 4) & 0x0F0F0F0F) | (((u1 >>> 6) & 0x03030303) << 4);
            int n0 = u1 & 0x3F3F3F3F;
            int s1 = (u2 & 0x0F0F0F0F) | (((u0 >>> 6) & 0x03030303) << 4);
            int s0 = u0 & 0x3F3F3F3F;
            int v0 = w.get(Q8Activations.I, base1 + 4);
            int v1 = w.get(Q8Activations.I, base1 + 8);
            int v2 = w.get(Q8Activations.I, base1 + 12);
            int o1 = ((v2 >>> 4) & 0x0F0F0F0F) | (((v1 >>> 6) & 0x03030303) << 4);
            int o0 = v1 & 0x3F3F3F3F;
            int t1 = (v2 & 0x0F0F0F0F) | (((v0 >>> 6) & 0x03030303) << 4);
            int t0 = v0 & 0x3F3F3F3F;
            int summs0 = 0;
            int summs1 = 0;
            for (int j = 0; j < 8; j++) {
                int sum = qa.get(Q8Activations.I, sums + 4L * j);
                summs0 += (((j < 4 ? n0 : n1) >>> (8 * (j & 3))) & 0xFF) * sum;
                summs1 += (((j < 4 ? o0 : o1) >>> (8 * (j & 3))) & 0xFF) * sum;
            }
            IntVector i0 = zi;
            IntVector i1 = zi;
            for (int g = 0; g < 4 * IPARTS; g++) {
                int jj = g / IPARTS;
                int part = g % IPARTS;
                int shift = 16 * (jj & 1);
                int word0 = jj < 2 ? s0 : s1;
                int word1 = jj < 2 ? t0 : t1;
                long e = a0 + 512L * b + 128L * jj + 2L * part * L;
                ShortVector x0 = ShortVector.fromMemorySegment(SQ, qa, e, LE);
                ShortVector x1 = ShortVector.fromMemorySegment(SQ, qa, e + 32, LE);
                ShortVector x2 = ShortVector.fromMemorySegment(SQ, qa, e + 64, LE);
                ShortVector x3 = ShortVector.fromMemorySegment(SQ, qa, e + 96, LE);
                long qs = 16 + 32L * jj + part * L;
                ShortVector q0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + qs, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector q1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + qs + 16, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector lo0 = q0.and((short) 0x0F).mul(x0).add(q1.and((short) 0x0F).mul(x1));
                ShortVector hi0 = q0.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).mul(x2)
                        .add(q1.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).mul(x3));
                i0 = i0.add(((IntVector) lo0.convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (word0 >>> shift) & 0xFF)))
                        .add(((IntVector) hi0.convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (word0 >>> (shift + 8)) & 0xFF)));
                ShortVector r0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + qs, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector r1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + qs + 16, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector lo1 = r0.and((short) 0x0F).mul(x0).add(r1.and((short) 0x0F).mul(x1));
                ShortVector hi1 = r0.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).mul(x2)
                        .add(r1.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).mul(x3));
                i1 = i1.add(((IntVector) lo1.convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (word1 >>> shift) & 0xFF)))
                        .add(((IntVector) hi1.convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (word1 >>> (shift + 8)) & 0xFF)));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, Dequant.f16(w, base0) * da), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, Dequant.f16(w, base1) * da), acc1);
            m0 = Math.fma(Dequant.f16(w, base0 + 2) * da, (float) summs0, m0);
            m1 = Math.fma(Dequant.f16(w, base1 + 2) * da, (float) summs1, m1);
        }
        c.set(F, c0 << 2, fold(acc0) - m0);
        c.set(F, c1 << 2, fold(acc1) - m1);
    }

    private static void q6_KPair(MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa, long a0,
                                 MemorySegment c, long c0, long c1) {
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = acc0;
        IntVector zi = IntVector.zero(IS);
        for (int b = 0; b < k / 256; b++) {
            long base0 = wOff0 + 210L * b;
            long base1 = wOff1 + 210L * b;
            float da = qa.get(F, a0 + Q8Activations.scaleOffset(k, b));
            IntVector i0 = zi;
            IntVector i1 = zi;
            for (int g = 0; g < 4 * IPARTS; g++) {
                int half = g / (2 * IPARTS);
                int is = (g / IPARTS) & 1;
                long o = 16L * is + (g % IPARTS) * L;
                long e = a0 + 512L * b + 256L * half + 2 * o;
                ShortVector x1 = ShortVector.fromMemorySegment(SQ, qa, e, LE);
                ShortVector x2 = ShortVector.fromMemorySegment(SQ, qa, e + 64, LE);
                ShortVector x3 = ShortVector.fromMemorySegment(SQ, qa, e + 128, LE);
                ShortVector x4 = ShortVector.fromMemorySegment(SQ, qa, e + 192, LE);
                long ql = 64L * half + o;
                long qh = 128 + 32L * half + o;
                long sc = 192 + 8L * half + is;
                ShortVector la = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + ql, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector lb = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + ql + 32, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector h = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base0 + qh, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector q1 = la.and((short) 0x0F)
                        .or(h.and((short) 3).lanewise(VectorOperators.LSHL, 4)).sub((short) 32);
                ShortVector q2 = lb.and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 2).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector q3 = la.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 4).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector q4 = lb.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 6).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                i0 = i0.add(((IntVector) q1.mul(x1).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base0 + sc))))
                        .add(((IntVector) q2.mul(x2).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base0 + sc + 2))))
                        .add(((IntVector) q3.mul(x3).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base0 + sc + 4))))
                        .add(((IntVector) q4.mul(x4).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base0 + sc + 6))));
                ShortVector ma = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + ql, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector mb = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + ql + 32, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector hh = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base1 + qh, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector r1 = ma.and((short) 0x0F)
                        .or(hh.and((short) 3).lanewise(VectorOperators.LSHL, 4)).sub((short) 32);
                ShortVector r2 = mb.and((short) 0x0F)
                        .or(hh.lanewise(VectorOperators.ASHR, 2).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector r3 = ma.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(hh.lanewise(VectorOperators.ASHR, 4).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector r4 = mb.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(hh.lanewise(VectorOperators.ASHR, 6).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                i1 = i1.add(((IntVector) r1.mul(x1).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base1 + sc))))
                        .add(((IntVector) r2.mul(x2).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base1 + sc + 2))))
                        .add(((IntVector) r3.mul(x3).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base1 + sc + 4))))
                        .add(((IntVector) r4.mul(x4).convertShape(VectorOperators.S2I, IS, 0))
                                .mul(IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, base1 + sc + 6))));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, Dequant.f16(w, base0 + 208) * da), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, Dequant.f16(w, base1 + 208) * da), acc1);
        }
        c.set(F, c0 << 2, fold(acc0));
        c.set(F, c1 << 2, fold(acc1));
    }

    private static void q8_0Rows4(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        long a1 = qaOff + 1 * qaStride;
        long a2 = qaOff + 2 * qaStride;
        long a3 = qaOff + 3 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z; FloatVector acc1 = z; FloatVector acc2 = z; FloatVector acc3 = z;
        for (int b = 0; b < k / 32; b++) {
            long base = wOff + 34L * b;
            float dw = Dequant.f16(w, base);
            long sOff = Q8Activations.scaleOffset(k, b);
            IntVector i0 = zi; IntVector i1 = zi; IntVector i2 = zi; IntVector i3 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 18 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector p0 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE)));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p1 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a1 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a1 + e + 32, LE)));
                i1 = i1.add((IntVector) p1.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p2 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a2 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a2 + e + 32, LE)));
                i2 = i2.add((IntVector) p2.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p3 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a3 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a3 + e + 32, LE)));
                i3 = i3.add((IntVector) p3.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a1 + sOff)), acc1);
            acc2 = ((FloatVector) i2.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a2 + sOff)), acc2);
            acc3 = ((FloatVector) i3.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a3 + sOff)), acc3);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0));
        if (L >= 16) {
            acc1 = acc1.add(acc1.rearrange(XOR8));
        }
        acc1 = acc1.add(acc1.rearrange(XOR4));
        acc1 = acc1.add(acc1.rearrange(XOR2));
        acc1 = acc1.add(acc1.rearrange(XOR1));
        c.set(F, (cOff + 1 * ldc) << 2, acc1.lane(0));
        if (L >= 16) {
            acc2 = acc2.add(acc2.rearrange(XOR8));
        }
        acc2 = acc2.add(acc2.rearrange(XOR4));
        acc2 = acc2.add(acc2.rearrange(XOR2));
        acc2 = acc2.add(acc2.rearrange(XOR1));
        c.set(F, (cOff + 2 * ldc) << 2, acc2.lane(0));
        if (L >= 16) {
            acc3 = acc3.add(acc3.rearrange(XOR8));
        }
        acc3 = acc3.add(acc3.rearrange(XOR4));
        acc3 = acc3.add(acc3.rearrange(XOR2));
        acc3 = acc3.add(acc3.rearrange(XOR1));
        c.set(F, (cOff + 3 * ldc) << 2, acc3.lane(0));
    }

    private static void q8_0Rows1(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z;
        for (int b = 0; b < k / 32; b++) {
            long base = wOff + 34L * b;
            float dw = Dequant.f16(w, base);
            long sOff = Q8Activations.scaleOffset(k, b);
            IntVector i0 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 18 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector p0 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE)));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0));
    }

    private static void q4_0Rows4(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        long a1 = qaOff + 1 * qaStride;
        long a2 = qaOff + 2 * qaStride;
        long a3 = qaOff + 3 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z; FloatVector acc1 = z; FloatVector acc2 = z; FloatVector acc3 = z;
        for (int b = 0; b < k / 32; b++) {
            long base = wOff + 18L * b;
            float dw = Dequant.f16(w, base);
            long sOff = Q8Activations.scaleOffset(k, b);
            IntVector i0 = zi; IntVector i1 = zi; IntVector i2 = zi; IntVector i3 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector q = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector w0 = q.and((short) 0x0F).sub((short) 8);
                ShortVector w1 = q.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).sub((short) 8);
                ShortVector p0 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE)));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p1 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a1 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a1 + e + 32, LE)));
                i1 = i1.add((IntVector) p1.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p2 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a2 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a2 + e + 32, LE)));
                i2 = i2.add((IntVector) p2.convertShape(VectorOperators.S2I, IS, 0));
                ShortVector p3 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a3 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a3 + e + 32, LE)));
                i3 = i3.add((IntVector) p3.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
            acc1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a1 + sOff)), acc1);
            acc2 = ((FloatVector) i2.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a2 + sOff)), acc2);
            acc3 = ((FloatVector) i3.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a3 + sOff)), acc3);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0));
        if (L >= 16) {
            acc1 = acc1.add(acc1.rearrange(XOR8));
        }
        acc1 = acc1.add(acc1.rearrange(XOR4));
        acc1 = acc1.add(acc1.rearrange(XOR2));
        acc1 = acc1.add(acc1.rearrange(XOR1));
        c.set(F, (cOff + 1 * ldc) << 2, acc1.lane(0));
        if (L >= 16) {
            acc2 = acc2.add(acc2.rearrange(XOR8));
        }
        acc2 = acc2.add(acc2.rearrange(XOR4));
        acc2 = acc2.add(acc2.rearrange(XOR2));
        acc2 = acc2.add(acc2.rearrange(XOR1));
        c.set(F, (cOff + 2 * ldc) << 2, acc2.lane(0));
        if (L >= 16) {
            acc3 = acc3.add(acc3.rearrange(XOR8));
        }
        acc3 = acc3.add(acc3.rearrange(XOR4));
        acc3 = acc3.add(acc3.rearrange(XOR2));
        acc3 = acc3.add(acc3.rearrange(XOR1));
        c.set(F, (cOff + 3 * ldc) << 2, acc3.lane(0));
    }

    private static void q4_0Rows1(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z;
        for (int b = 0; b < k / 32; b++) {
            long base = wOff + 18L * b;
            float dw = Dequant.f16(w, base);
            long sOff = Q8Activations.scaleOffset(k, b);
            IntVector i0 = zi;
            for (int part = 0; part < IPARTS; part++) {
                long e = 64L * b + 2L * part * L;
                ShortVector q = (ShortVector) ByteVector.fromMemorySegment(BQ, w, base + 2 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector w0 = q.and((short) 0x0F).sub((short) 8);
                ShortVector w1 = q.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F).sub((short) 8);
                ShortVector p0 = w0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE))
                        .add(w1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE)));
                i0 = i0.add((IntVector) p0.convertShape(VectorOperators.S2I, IS, 0));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0));
    }

    private static void q4_KRows1(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z;
        float m0 = 0f;
        for (int b = 0; b < k / 256; b++) {
            long base = wOff + 144L * b;
            float dw = Dequant.f16(w, base);
            float dmin = Dequant.f16(w, base + 2);
            // ggml's unpacking of the twelve scale bytes: bytes 0-7 of (u0, u1) are the scales, of (u2, u3) the mins.
            int u0 = w.get(Q8Activations.I, base + 4);
            int u1 = w.get(Q8Activations.I, base + 8);
            int u2 = w.get(Q8Activations.I, base + 12);
            int u3 = ((u2 >>> 4) & 0x0F0F0F0F) | (((u1 >>> 6) & 0x03030303) << 4);
            int mins = u1 & 0x3F3F3F3F;
            u1 = (u2 & 0x0F0F0F0F) | (((u0 >>> 6) & 0x03030303) << 4);
            u0 &= 0x3F3F3F3F;
            u2 = mins;
            long sOff = Q8Activations.scaleOffset(k, b);
            long sums = Q8Activations.sumOffset(k, 8 * b);
            int summs0 = 0;
            for (int j = 0; j < 8; j++) {
                int min = ((j < 4 ? u2 : u3) >>> (8 * (j & 3))) & 0xFF;
                summs0 += min * qa.get(Q8Activations.I, a0 + sums + 4L * j);
            }
            IntVector i0 = zi;
            for (int g = 0; g < 4 * IPARTS; g++) {
                int jj = g / IPARTS;
                int part = g % IPARTS;
                int word = jj < 2 ? u0 : u1;
                IntVector scLo = IntVector.broadcast(IS, (word >>> (16 * (jj & 1))) & 0xFF);
                IntVector scHi = IntVector.broadcast(IS, (word >>> (16 * (jj & 1) + 8)) & 0xFF);
                long qs = base + 16 + 32L * jj;
                ShortVector q0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, qs + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector q1 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, qs + 16 + part * L, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector l0 = q0.and((short) 0x0F);
                ShortVector l1 = q1.and((short) 0x0F);
                ShortVector h0 = q0.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F);
                ShortVector h1 = q1.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F);
                long e = 512L * b + 128L * jj + 2L * part * L;
                ShortVector lo0 = l0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE))
                        .add(l1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 32, LE)));
                ShortVector hi0 = h0.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 64, LE))
                        .add(h1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 96, LE)));
                i0 = i0.add(((IntVector) lo0.convertShape(VectorOperators.S2I, IS, 0)).mul(scLo))
                        .add(((IntVector) hi0.convertShape(VectorOperators.S2I, IS, 0)).mul(scHi));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
            m0 = Math.fma(dmin * qa.get(F, a0 + sOff), (float) summs0, m0);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0) - m0);
    }

    private static void q6_KRows1(MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff,
                                  long qaStride, MemorySegment c, long cOff, long ldc) {
        long a0 = qaOff + 0 * qaStride;
        FloatVector z = FloatVector.zero(S);
        IntVector zi = IntVector.zero(IS);
        FloatVector acc0 = z;
        for (int b = 0; b < k / 256; b++) {
            long base = wOff + 210L * b;
            float dw = Dequant.f16(w, base + 208);
            long sOff = Q8Activations.scaleOffset(k, b);
            IntVector i0 = zi;
            // One flat loop over (half, scale pair, part): nested loops would carry the accumulators through
            // phis C2 does not always scalar-replace (the four-row tile then boxed every vector).
            for (int g = 0; g < 4 * IPARTS; g++) {
                int half = g / (2 * IPARTS);
                int is = (g / IPARTS) & 1;
                long ql = base + 64L * half;
                long qh = base + 128 + 32L * half;
                long sc = base + 192 + 8L * half + is;
                IntVector s1 = IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, sc));
                IntVector s2 = IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, sc + 2));
                IntVector s3 = IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, sc + 4));
                IntVector s4 = IntVector.broadcast(IS, (int) w.get(ValueLayout.JAVA_BYTE, sc + 6));
                long o = 16L * is + (g % IPARTS) * L;
                ShortVector qa0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, ql + o, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector qb0 = (ShortVector) ByteVector.fromMemorySegment(BQ, w, ql + 32 + o, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector h = (ShortVector) ByteVector.fromMemorySegment(BQ, w, qh + o, LE)
                        .convertShape(VectorOperators.B2S, SQ, 0);
                ShortVector q1 = qa0.and((short) 0x0F)
                        .or(h.and((short) 3).lanewise(VectorOperators.LSHL, 4)).sub((short) 32);
                ShortVector q2 = qb0.and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 2).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector q3 = qa0.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 4).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                ShortVector q4 = qb0.lanewise(VectorOperators.ASHR, 4).and((short) 0x0F)
                        .or(h.lanewise(VectorOperators.ASHR, 6).and((short) 3).lanewise(VectorOperators.LSHL, 4))
                        .sub((short) 32);
                long e = 512L * b + 256L * half + 2 * o;
                ShortVector p01 = q1.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e, LE));
                ShortVector p02 = q2.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 64, LE));
                ShortVector p03 = q3.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 128, LE));
                ShortVector p04 = q4.mul(ShortVector.fromMemorySegment(SQ, qa, a0 + e + 192, LE));
                i0 = i0.add(((IntVector) p01.convertShape(VectorOperators.S2I, IS, 0)).mul(s1))
                        .add(((IntVector) p02.convertShape(VectorOperators.S2I, IS, 0)).mul(s2))
                        .add(((IntVector) p03.convertShape(VectorOperators.S2I, IS, 0)).mul(s3))
                        .add(((IntVector) p04.convertShape(VectorOperators.S2I, IS, 0)).mul(s4));
            }
            acc0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(S, dw * qa.get(F, a0 + sOff)), acc0);
        }
        if (L >= 16) {
            acc0 = acc0.add(acc0.rearrange(XOR8));
        }
        acc0 = acc0.add(acc0.rearrange(XOR4));
        acc0 = acc0.add(acc0.rearrange(XOR2));
        acc0 = acc0.add(acc0.rearrange(XOR1));
        c.set(F, (cOff + 0 * ldc) << 2, acc0.lane(0));
    }
}
