package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;

import dev.ripcord.format.gguf.GgmlType;

/**
 * Quantized weight rows times one activation row quantized to int8 blocks: the decode kernels of the native
 * layer ({@link NativeKernels}) and their scalar twin ({@link NativeTwin}), which spells out the numeric
 * definition every native variant reproduces bit for bit.
 *
 * <p>The definition. Activations are quantized as {@link Kernels#quantizeActivations} does (32- or 256-element
 * blocks, {@code d = amax / 127}, quants rounded half to even) into {@link #activationRowBytes} bytes: {@code k}
 * int8 quants, then {@code k / 32} float scales, then {@code k / 32} int sums of each 32 quants. For weight block
 * {@code b} (32 elements of Q8_0/Q4_0, 256 of Q4_K/Q6_K) the exact integer {@code isum_b = Σ sc(i)·q(i)·a(i)}
 * ({@code q} the weight quant: Q8_0 as stored, Q4_0 nibble − 8, Q4_K nibble, Q6_K six bits − 32; {@code sc} its
 * sub-block scale, 1 for Q8_0/Q4_0; {@code a} the activation quant); then, blocks in increasing order, eight float
 * accumulators {@code acc[b mod 8] = fma((float) isum_b, dw_b · da_b, acc[b mod 8])} ({@code dw} the weight
 * block's f16 scale, {@code da} the activation block's); they fold as {@code acc[l] += acc[l + 4]} ({@code l < 4}),
 * {@code acc[l] += acc[l + 2]} ({@code l < 2}), {@code acc[0] + acc[1]}. Q4_K subtracts its minimums, one chain
 * {@code m = fma(dmin_b · da_b, (float) Σ_j min_j · bsum_j, m)}, from that. Nothing in it depends on a vector
 * width, so every instruction set gives the same bits.
 */
public sealed interface QuantRows permits NativeKernels, NativeTwin {

    /** Whether weights of {@code type} have a kernel here: Q8_0, Q4_0, Q4_K and Q6_K. */
    static boolean supports(GgmlType type) {
        return Q8Activations.blockSize(type) != 0;
    }

    /** Bytes of one quantized activation row of {@code k} elements. */
    static long activationRowBytes(int k) {
        return Q8Activations.byteRowBytes(k);
    }

    /** Quantizes {@code x[xOff, xOff + k)} (floats) for weights of {@code type} into {@code qa} at byte {@code qaOff}. */
    static void quantize(GgmlType type, MemorySegment x, long xOff, int k, MemorySegment qa, long qaOff) {
        Q8Activations.quantizeBytes(type, x, xOff, k, qa, qaOff);
    }

    /**
     * {@code out[outOff + r] = row r · activations} for {@code r < rows}: row {@code r} is {@code k} elements of
     * {@code type} at byte {@code wOff + r · rowStride} of {@code w}; the activations are one row quantized by
     * {@link #quantize} at byte {@code qaOff} of {@code qa}; {@code outOff} counts floats.
     */
    void rows(GgmlType type, MemorySegment w, long wOff, long rowStride, int rows, int k, MemorySegment qa, long qaOff,
              MemorySegment out, long outOff);

    /** What runs: {@code native-avx512vnni}, {@code native-avx2}, …, or {@code native-twin}. */
    String name();
}
