package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The scalar twin of the native decode kernels: {@link QuantRows}' definition written out in plain Java, the
 * control every native variant is tested against. Stateless; allocates one small array per row.
 */
public final class NativeTwin implements QuantRows {
    public static final NativeTwin INSTANCE = new NativeTwin();
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfByte B = ValueLayout.JAVA_BYTE;

    private NativeTwin() {
    }

    @Override
    public String name() {
        return "native-twin";
    }

    @Override
    public void rows(GgmlType type, MemorySegment w, long wOff, long rowStride, int rows, int k, MemorySegment qa,
                     long qaOff, MemorySegment out, long outOff) {
        Q8Activations.requireSupported(type, k);
        for (int r = 0; r < rows; r++) {
            out.set(F, (outOff + r) << 2, row(type, w, wOff + r * rowStride, k, qa, qaOff));
        }
    }

    static float row(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment qa, long a) {
        long scales = a + k;
        long sums = scales + 4L * (k / 32);
        float[] acc = new float[8];
        float mins = 0f;
        int bs = type.blockSize();
        for (int b = 0; b < k / bs; b++) {
            long qx = a + (long) bs * b;
            float da = qa.get(F, scales + 4L * b);
            float dw;
            int isum = 0;
            switch (type) {
                case Q8_0 -> {
                    long base = wOff + 34L * b;
                    dw = Dequant.f16(w, base);
                    for (int i = 0; i < 32; i++) {
                        isum += w.get(B, base + 2 + i) * qa.get(B, qx + i);
                    }
                }
                case Q4_0 -> {
                    long base = wOff + 18L * b;
                    dw = Dequant.f16(w, base);
                    for (int i = 0; i < 16; i++) {
                        int q = Dequant.u8(w, base + 2 + i);
                        isum += ((q & 0xF) - 8) * qa.get(B, qx + i);
                        isum += ((q >> 4) - 8) * qa.get(B, qx + i + 16);
                    }
                }
                case Q4_K -> {
                    long base = wOff + 144L * b;
                    dw = Dequant.f16(w, base);
                    int summs = 0;
                    for (int j = 0; j < 8; j++) {
                        int sc = Dequant.scaleMinK4(w, base + 4, j, 0);
                        summs += Dequant.scaleMinK4(w, base + 4, j, 1) * qa.get(I, sums + 4L * (8 * b + j));
                        long qs = base + 16 + 32L * (j / 2);
                        int t = 0;
                        for (int i = 0; i < 32; i++) {
                            int v = Dequant.u8(w, qs + i);
                            t += (j % 2 == 0 ? v & 0xF : v >> 4) * qa.get(B, qx + 32L * j + i);
                        }
                        isum += sc * t;
                    }
                    mins = Math.fma(Dequant.f16(w, base + 2) * da, (float) summs, mins);
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
                                isum += w.get(B, sc + l / 16 + 2 * g) * q[g] * qa.get(B, qx + 128L * half + 32 * g + l);
                            }
                        }
                    }
                }
                default -> throw new IllegalArgumentException("no native kernel for ggml type " + type);
            }
            acc[b & 7] = Math.fma((float) isum, dw * da, acc[b & 7]);
        }
        for (int l = 0; l < 4; l++) {
            acc[l] = acc[l] + acc[l + 4];
        }
        for (int l = 0; l < 2; l++) {
            acc[l] = acc[l] + acc[l + 2];
        }
        return acc[0] + acc[1] - mins;
    }
}
