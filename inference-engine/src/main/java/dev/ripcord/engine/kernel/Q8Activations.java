package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.format.gguf.GgmlType;

/**
 * Activation rows quantized to 8-bit integers for the integer dot products ({@link Kernels#dotQ8}), as ggml's
 * {@code quantize_row_q8_0} (one scale per 32 elements, for Q8_0 and Q4_0 weights) and {@code quantize_row_q8_K}
 * (one scale per 256, for Q4_K and Q6_K) prepare the activation operand of its {@code vec_dot_*} kernels.
 *
 * <p>Row layout, {@link #rowBytes(int) rowBytes(n)} bytes for {@code n} elements:
 * <ul>
 *   <li>{@code n} quants as little-endian int16 (values in [-127, 127]: already widened, so a kernel loads them
 *       straight into short lanes);</li>
 *   <li>{@code n / 32} float scales: scale {@code b} belongs to block {@code b} of {@link #blockSize} elements
 *       (only the first {@code n / 256} are used for 256-element blocks);</li>
 *   <li>{@code n / 32} int sums of the quants of each 32 elements (ggml's {@code bsums}, per 32 rather than per
 *       16): the Q4_K kernel subtracts its minimums with them.</li>
 * </ul>
 * For each block: {@code amax = max |x|}, {@code d = amax / 127}, {@code id = d != 0 ? 1 / d : 0},
 * {@code q = rint(x · id)}, rounding half to even (ggml's {@code nearest_int}; ggml's Q8_0 rounds half away from
 * zero and stores {@code d} as f16, a difference of at most one unit in a quant on exact ties). One scalar
 * implementation serves both kernel twins, so their operands are identical by construction; it costs well under
 * one percent of a forward (one pass over each matrix input, against a pass over every weight).
 */
final class Q8Activations {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;
    static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;
    /** Adding then subtracting 1.5·2²³ rounds a float of magnitude below 2²² to an integer, half to even. */
    private static final float ROUND = 12582912f;

    private Q8Activations() {
    }

    static long rowBytes(int n) {
        return 2L * n + 8L * (n / 32);
    }

    /** Byte offset, within a row, of block {@code b}'s scale. */
    static long scaleOffset(int n, int b) {
        return 2L * n + 4L * b;
    }

    /** Byte offset, within a row, of the sum of 32-element group {@code g}. */
    static long sumOffset(int n, int g) {
        return 2L * n + 4L * (n / 32) + 4L * g;
    }

    /** 32 for Q8_0 and Q4_0 weights, 256 for Q4_K and Q6_K; 0 for a type without an integer kernel. */
    static int blockSize(GgmlType weightType) {
        return switch (weightType) {
            case Q8_0, Q4_0 -> 32;
            case Q4_K, Q6_K -> 256;
            default -> 0;
        };
    }

    static void requireSupported(GgmlType weightType, int n) {
        int bs = blockSize(weightType);
        if (bs == 0) {
            throw new IllegalArgumentException("no integer dot product for ggml type " + weightType);
        }
        if (n % bs != 0) {
            throw new IllegalArgumentException(n + " elements is not a whole number of " + weightType + " blocks");
        }
    }

    static void quantize(GgmlType weightType, MemorySegment x, long xOff, int n, MemorySegment qa, long qaOff) {
        quantize(weightType, x, xOff, n, qa, qaOff, false);
    }

    /** Bytes of one activation row of {@code n} elements in the native kernels' layout ({@link #quantizeBytes}). */
    static long byteRowBytes(int n) {
        return n + 8L * (n / 32);
    }

    /**
     * The same quantization as {@link #quantize}, in the native kernels' layout: {@code n} int8 quants, then the
     * {@code n / 32} float scales, then the {@code n / 32} int sums ({@link #byteRowBytes} bytes).
     */
    static void quantizeBytes(GgmlType weightType, MemorySegment x, long xOff, int n, MemorySegment qa,
                              long qaOff) {
        quantize(weightType, x, xOff, n, qa, qaOff, true);
    }

    private static void quantize(GgmlType weightType, MemorySegment x, long xOff, int n, MemorySegment qa,
                                 long qaOff, boolean bytes) {
        requireSupported(weightType, n);
        int width = bytes ? 1 : 2;
        long tables = (long) width * n;
        int bs = blockSize(weightType);
        long xb = xOff << 2;
        for (int b = 0; b < n / bs; b++) {
            float amax = 0f;
            for (int i = 0; i < bs; i++) {
                amax = Math.max(amax, Math.abs(x.get(F, xb + 4L * (b * bs + i))));
            }
            float d = amax / 127f;
            float id = d != 0f ? 1f / d : 0f;
            for (int i = 0; i < bs; i++) {
                float v = x.get(F, xb + 4L * (b * bs + i)) * id;
                int q = (int) ((v + ROUND) - ROUND);
                if (bytes) {
                    qa.set(ValueLayout.JAVA_BYTE, qaOff + b * bs + i, (byte) q);
                } else {
                    qa.set(H, qaOff + 2L * (b * bs + i), (short) q);
                }
            }
            qa.set(F, qaOff + tables + 4L * b, d);
        }
        for (int g = 0; g < n / 32; g++) {
            int sum = 0;
            for (int i = 0; i < 32; i++) {
                sum += bytes ? qa.get(ValueLayout.JAVA_BYTE, qaOff + 32L * g + i)
                        : qa.get(H, qaOff + 2L * (32 * g + i));
            }
            qa.set(I, qaOff + tables + 4L * (n / 32) + 4L * g, sum);
        }
    }
}
