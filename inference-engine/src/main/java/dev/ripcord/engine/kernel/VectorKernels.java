package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import jdk.incubator.vector.FloatVector;
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
}
