package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The scalar twins: the control every vector kernel is tested against, and a fallback where the Vector API is
 * unwelcome. Reductions keep {@code lanes} partial sums exactly like {@link VectorKernels} does, so the two agree
 * bit for bit; the only per-lane state is a small array allocated once per instance.
 */
final class ScalarKernels implements Kernels {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private final int lanes;

    ScalarKernels(int lanes) {
        if (lanes < 1 || lanes > 64 || Integer.bitCount(lanes) != 1) {
            throw new IllegalArgumentException("lanes must be a power of two in [1, 64], got " + lanes);
        }
        this.lanes = lanes;
    }

    @Override
    public int lanes() {
        return lanes;
    }

    @Override
    public String name() {
        return "scalar";
    }

    static float get(MemorySegment s, long index) {
        return s.get(F, index << 2);
    }

    static void set(MemorySegment s, long index, float v) {
        s.set(F, index << 2, v);
    }

    @Override
    public void gemm(MemorySegment a, long aOff, long lda, int rows, int k,
                     MemorySegment b, long bOff, long ldb, int cols,
                     MemorySegment c, long cOff, long ldc, boolean accumulate) {
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < cols; j++) {
                long ci = cOff + r * ldc + j;
                float acc = accumulate ? get(c, ci) : 0f;
                for (int i = 0; i < k; i++) {
                    acc = Math.fma(get(a, aOff + r * lda + i), get(b, bOff + i * ldb + j), acc);
                }
                set(c, ci, acc);
            }
        }
    }

    @Override
    public float sumOfSquares(MemorySegment x, long off, int n) {
        // lanes partial sums, as the vector body keeps them, then the tail folded into the total.
        int body = n - n % lanes;
        float total = 0f;
        for (int lane = 0; lane < lanes && body > 0; lane++) {
            float partial = 0f;
            for (int i = lane; i < body; i += lanes) {
                float v = get(x, off + i);
                partial = Math.fma(v, v, partial);
            }
            total += partial;
        }
        for (int i = body; i < n; i++) {
            float v = get(x, off + i);
            total = Math.fma(v, v, total);
        }
        return total;
    }

    @Override
    public void rmsnorm(MemorySegment out, long outOff, MemorySegment x, long xOff, MemorySegment w, long wOff,
                        int n, float eps) {
        float inv = RmsNorm.inverseRms(sumOfSquares(x, xOff, n), n, eps);
        for (int i = 0; i < n; i++) {
            set(out, outOff + i, get(w, wOff + i) * (inv * get(x, xOff + i)));
        }
    }

    @Override
    public float max(MemorySegment x, long off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, get(x, off + i));
        }
        return max;
    }

    @Override
    public void scale(MemorySegment x, long off, int n, float factor) {
        for (int i = 0; i < n; i++) {
            set(x, off + i, get(x, off + i) * factor);
        }
    }

    @Override
    public float expAndSum(MemorySegment x, long off, int n, float max) {
        int body = n - n % lanes;
        for (int i = 0; i < n; i++) {
            set(x, off + i, Exp.exp(get(x, off + i) - max));
        }
        float total = 0f;
        for (int lane = 0; lane < lanes && body > 0; lane++) {
            float partial = 0f;
            for (int i = lane; i < body; i += lanes) {
                partial += get(x, off + i);
            }
            total += partial;
        }
        for (int i = body; i < n; i++) {
            total += get(x, off + i);
        }
        return total;
    }

    @Override
    public void divide(MemorySegment x, long off, int n, float divisor) {
        for (int i = 0; i < n; i++) {
            set(x, off + i, get(x, off + i) / divisor);
        }
    }

    @Override
    public void add(MemorySegment x, long xOff, MemorySegment y, long yOff, int n) {
        for (int i = 0; i < n; i++) {
            set(x, xOff + i, get(x, xOff + i) + get(y, yOff + i));
        }
    }

    @Override
    public void swiglu(MemorySegment h, long hOff, MemorySegment g, long gOff, int n) {
        for (int i = 0; i < n; i++) {
            float v = get(h, hOff + i);
            float silu = v / (Exp.exp(-v) + 1.0f);
            set(h, hOff + i, silu * get(g, gOff + i));
        }
    }

    @Override
    public void rope(MemorySegment x, long off, int heads, int headSize, MemorySegment cos, MemorySegment sin,
                     long tableOff) {
        for (int h = 0; h < heads; h++) {
            long base = off + (long) h * headSize;
            for (int i = 0; i + 1 < headSize; i += 2) {
                float x0 = get(x, base + i);
                float x1 = get(x, base + i + 1);
                set(x, base + i, x0 * get(cos, tableOff + i) + x1 * get(sin, tableOff + i));
                set(x, base + i + 1, x1 * get(cos, tableOff + i + 1) + x0 * get(sin, tableOff + i + 1));
            }
        }
    }

    @Override
    public void dequantize(GgmlType type, MemorySegment src, long srcByteOff, int n, MemorySegment dst, long dstOff) {
        Dequant.requireSupported(type, n);
        Dequant.blocks(type, src, srcByteOff, 0, n / type.blockSize(), dst, dstOff);
    }

    @Override
    public void dotProducts(MemorySegment a, long aOff, long lda, int rows, int k,
                            MemorySegment b, long bOff, long ldb, int cols,
                            MemorySegment c, long cOff, long ldc) {
        int body = k - k % lanes;
        float[] partial = new float[lanes];
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < cols; j++) {
                java.util.Arrays.fill(partial, 0f);
                for (int i = 0; i < body; i++) {
                    partial[i % lanes] = Math.fma(get(a, aOff + r * lda + i), get(b, bOff + j * ldb + i),
                            partial[i % lanes]);
                }
                for (int h = lanes / 2; h >= 1; h /= 2) {
                    for (int lane = 0; lane < h; lane++) {
                        partial[lane] = partial[lane] + partial[lane + h];
                    }
                }
                float total = partial[0];
                for (int i = body; i < k; i++) {
                    total = Math.fma(get(a, aOff + r * lda + i), get(b, bOff + j * ldb + i), total);
                }
                set(c, cOff + r * ldc + j, total);
            }
        }
    }

    @Override
    public float dotQuantized(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment x, long xOff) {
        MemorySegment row = MemorySegment.ofArray(new float[k]);
        dequantize(type, w, wOff, k, row, 0);
        MemorySegment out = MemorySegment.ofArray(new float[1]);
        dotProducts(x, xOff, k, 1, k, row, 0, k, 1, out, 0, 1);
        return out.get(F, 0);
    }

    @Override
    public void dotQ8(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff, long qaStride,
                      int rows, MemorySegment c, long cOff, long ldc) {
        Q8Activations.requireSupported(type, k);
        for (int r = 0; r < rows; r++) {
            set(c, cOff + r * ldc, dotQ8(type, w, wOff, k, qa, qaOff + r * qaStride));
        }
    }

    /** One weight row against one activation row, as {@link Kernels#dotQ8} defines it. */
    private float dotQ8(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment qa, long a) {
        float[] acc = new float[lanes];
        int[] lane = new int[lanes];
        float mins = 0f;
        int bs = Q8Activations.blockSize(type);
        for (int b = 0; b < k / bs; b++) {
            java.util.Arrays.fill(lane, 0);
            float da = qa.get(F, a + Q8Activations.scaleOffset(k, b));
            long qx = a + 2L * bs * b; // the block's activation quants
            float dw;
            switch (type) {
                case Q8_0 -> {
                    long base = wOff + 34L * b;
                    dw = Dequant.f16(w, base);
                    for (int i = 0; i < 32; i++) {
                        lane[i % lanes] += w.get(ValueLayout.JAVA_BYTE, base + 2 + i) * act(qa, qx, i);
                    }
                }
                case Q4_0 -> {
                    long base = wOff + 18L * b;
                    dw = Dequant.f16(w, base);
                    for (int i = 0; i < 16; i++) {
                        int q = Dequant.u8(w, base + 2 + i);
                        lane[i % lanes] += ((q & 0xF) - 8) * act(qa, qx, i);
                        lane[(i + 16) % lanes] += ((q >> 4) - 8) * act(qa, qx, i + 16);
                    }
                }
                case Q4_K -> {
                    long base = wOff + 144L * b;
                    dw = Dequant.f16(w, base);
                    float dmin = Dequant.f16(w, base + 2);
                    int summs = 0;
                    for (int j = 0; j < 8; j++) {
                        int sc = Dequant.scaleMinK4(w, base + 4, j, 0);
                        int m = Dequant.scaleMinK4(w, base + 4, j, 1);
                        summs += m * qa.get(Q8Activations.I, a + Q8Activations.sumOffset(k, 8 * b + j));
                        long qs = base + 16 + 32L * (j / 2);
                        for (int i = 0; i < 32; i++) {
                            int byteValue = Dequant.u8(w, qs + i);
                            int q = j % 2 == 0 ? byteValue & 0xF : byteValue >> 4;
                            int e = 32 * j + i;
                            lane[e % lanes] += sc * q * act(qa, qx, e);
                        }
                    }
                    mins = Math.fma(dmin * da, (float) summs, mins);
                }
                case Q6_K -> {
                    long base = wOff + 210L * b;
                    dw = Dequant.f16(w, base + 208);
                    for (int half = 0; half < 2; half++) {
                        long ql = base + 64L * half;
                        long qh = base + 128 + 32L * half;
                        long sc = base + 192 + 8L * half;
                        for (int l = 0; l < 32; l++) {
                            int h = Dequant.u8(w, qh + l);
                            int lo = Dequant.u8(w, ql + l);
                            int hi = Dequant.u8(w, ql + l + 32);
                            int[] q = {((lo & 0xF) | ((h & 3) << 4)) - 32, ((hi & 0xF) | (((h >> 2) & 3) << 4)) - 32,
                                    ((lo >> 4) | (((h >> 4) & 3) << 4)) - 32, ((hi >> 4) | (((h >> 6) & 3) << 4)) - 32};
                            for (int g = 0; g < 4; g++) {
                                int e = 128 * half + 32 * g + l;
                                int scale = w.get(ValueLayout.JAVA_BYTE, sc + l / 16 + 2 * g);
                                lane[e % lanes] += scale * q[g] * act(qa, qx, e);
                            }
                        }
                    }
                }
                default -> throw new IllegalArgumentException("no integer dot product for ggml type " + type);
            }
            float s = dw * da;
            for (int l = 0; l < lanes; l++) {
                acc[l] = Math.fma((float) lane[l], s, acc[l]);
            }
        }
        for (int h = lanes / 2; h >= 1; h /= 2) {
            for (int l = 0; l < h; l++) {
                acc[l] = acc[l] + acc[l + h];
            }
        }
        return type == GgmlType.Q4_K ? acc[0] - mins : acc[0];
    }

    private static int act(MemorySegment qa, long blockQuants, int i) {
        return qa.get(Q8Activations.H, blockQuants + 2L * i);
    }
}
