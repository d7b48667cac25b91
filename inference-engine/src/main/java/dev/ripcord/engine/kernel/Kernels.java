package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The arithmetic the transformer needs, over little-endian FP32 data in {@link MemorySegment}s.
 *
 * <p>Two implementations exist: {@link #vector()} (Vector API body, scalar tail) and {@link #scalar(int)} (plain
 * Java). For the same lane count they produce bit-identical results; see the package note for why that holds.
 * Offsets and strides are in floats. Kernels allocate nothing and are safe to call from many threads at once on
 * disjoint outputs.
 */
public sealed interface Kernels permits VectorKernels, ScalarKernels {

    /** System property that overrides the vector width in bits (128, 256 or 512). */
    String VECTOR_BITS_PROPERTY = "ripcord.engine.vectorBits";

    /** The Vector API kernels at the preferred (or {@value #VECTOR_BITS_PROPERTY}-selected) width. */
    static Kernels vector() {
        return VectorKernels.INSTANCE;
    }

    /** The scalar twins, emulating {@code lanes} partial sums so that they match the vector kernels bit for bit. */
    static Kernels scalar(int lanes) {
        return new ScalarKernels(lanes);
    }

    /** Number of float lanes, i.e. the number of partial sums a horizontal reduction keeps. */
    int lanes();

    /** {@code "vector"} or {@code "scalar"}; for diagnostics. */
    String name();

    /**
     * {@code C[r][j] = (accumulate ? C[r][j] : 0) + Σ_{i<k} A[r][i]·B[i][j]} for {@code r < rows}, {@code j < cols},
     * as a chain of fused multiply-adds in increasing {@code i}. Element {@code (r, i)} of A lives at
     * {@code aOff + r·lda + i}, B's {@code (i, j)} at {@code bOff + i·ldb + j}, C's {@code (r, j)} at
     * {@code cOff + r·ldc + j}.
     */
    void gemm(MemorySegment a, long aOff, long lda, int rows, int k,
              MemorySegment b, long bOff, long ldb, int cols,
              MemorySegment c, long cOff, long ldc, boolean accumulate);

    /** Σ x[i]² over {@code n} elements, with per-lane partial sums folded in lane order, then the tail. */
    float sumOfSquares(MemorySegment x, long off, int n);

    /** {@code out[i] = w[i] · (x[i] · 1/sqrt(Σx²/n + eps))}, the llama2.c RMSNorm. {@code out} may alias {@code x}. */
    void rmsnorm(MemorySegment out, long outOff, MemorySegment x, long xOff, MemorySegment w, long wOff,
                 int n, float eps);

    /** The maximum of {@code n} elements. */
    float max(MemorySegment x, long off, int n);

    /** Multiplies {@code n} elements by {@code factor} in place. */
    void scale(MemorySegment x, long off, int n, float factor);

    /** Replaces {@code x[i]} by {@code exp(x[i] - max)} in place and returns their sum (lane-partial order). */
    float expAndSum(MemorySegment x, long off, int n, float max);

    /** Divides {@code n} elements by {@code divisor} in place. */
    void divide(MemorySegment x, long off, int n, float divisor);

    /** {@code x[i] += y[i]}. */
    void add(MemorySegment x, long xOff, MemorySegment y, long yOff, int n);

    /** SwiGLU gate: {@code h[i] = silu(h[i]) · g[i]} with {@code silu(v) = v / (1 + exp(-v))}. */
    void swiglu(MemorySegment h, long hOff, MemorySegment g, long gOff, int n);

    /**
     * Rotary embedding in llama2.c's layout (adjacent pairs rotate together) over {@code heads} heads of
     * {@code headSize} floats each, in place. {@code cos}/{@code sin} hold one position's table of
     * {@code headSize} floats starting at {@code tableOff}: {@code cos[2j] = cos[2j+1] = cos θ_j},
     * {@code sin[2j] = -sin θ_j}, {@code sin[2j+1] = sin θ_j}, so that
     * {@code out = x·cos + swapPairs(x)·sin}.
     */
    void rope(MemorySegment x, long off, int heads, int headSize, MemorySegment cos, MemorySegment sin,
              long tableOff);

    /**
     * Dequantizes {@code n} elements (a whole number of {@code type}'s blocks) of a ggml-typed row that starts at
     * byte {@code srcByteOff} of {@code src}, into floats {@code dst[dstOff, dstOff + n)}. Supported types: F32, F16,
     * BF16, Q8_0, Q4_0, Q4_K, Q6_K; each element is exactly ggml's {@code dequantize_row_*} value (see
     * {@code Dequant}), so the twins agree bit for bit.
     *
     * @throws IllegalArgumentException for another type or a partial block
     */
    void dequantize(GgmlType type, MemorySegment src, long srcByteOff, int n, MemorySegment dst, long dstOff);

    /**
     * {@code C[r][j] = Σ_{i<k} A[r][i]·B[j][i]} for {@code r < rows}, {@code j < cols} (A times B transposed: both
     * operands are read along {@code k}, as a row-major weight matrix is stored). Each element is computed the
     * same way whatever the tile it falls in: {@link #lanes()} partial sums, each a chain of fused multiply-adds
     * over whole vectors of {@code k} in increasing order, folded pairwise ({@code s[i] += s[i ^ h]} for
     * {@code h = lanes/2, …, 1}, then lane 0), then the tail {@code i ≥ k - k % lanes} as one FMA chain onto that.
     */
    void dotProducts(MemorySegment a, long aOff, long lda, int rows, int k,
                     MemorySegment b, long bOff, long ldb, int cols,
                     MemorySegment c, long cOff, long ldc);

    /**
     * The dot product of one quantized weight row ({@code k} elements of {@code type} at byte {@code wOff} of
     * {@code w}) with {@code x[xOff, xOff + k)}: bit-identical to {@link #dequantize dequantizing} the row and
     * taking {@link #dotProducts} with it, without writing the dequantized row anywhere (the decode path: one
     * activation row reads each weight once). The vector kernel fuses Q8_0 and Q4_0; other types go through a
     * dequantized copy.
     */
    float dotQuantized(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment x, long xOff);

    /**
     * Two weight rows (at bytes {@code wOff0} and {@code wOff1} of {@code w}) against one float activation row:
     * {@code c[c0]} and {@code c[c1]} (floats) get exactly what {@link #dotQuantized} gives for each row. The
     * decode path for the types {@link #tableDecode} names, whose vector body looks each nibble's dequantized value
     * up in a per-block table; two rows far apart keep two sequential memory streams in flight.
     */
    default void dotQuantizedPair(GgmlType type, MemorySegment w, long wOff0, long wOff1, int k, MemorySegment x,
                                  long xOff, MemorySegment c, long c0, long c1) {
        c.set(ValueLayout.JAVA_FLOAT_UNALIGNED, c0 << 2, dotQuantized(type, w, wOff0, k, x, xOff));
        c.set(ValueLayout.JAVA_FLOAT_UNALIGNED, c1 << 2, dotQuantized(type, w, wOff1, k, x, xOff));
    }

    /**
     * Whether a decode step over weights of {@code type} takes {@link #dotQuantizedPair} (float activations, exactly
     * the dequantize path) rather than the integer {@link #dotQ8Pair}: Q4_0 and Q4_K with 16 float lanes, where
     * the sixteen values a nibble dequantizes to fill one vector and the lookup is cheaper than the integer
     * kernels' widening multiplies. A policy of the types and width alone, so both twins take the same path.
     */
    static boolean tableDecode(GgmlType type, int lanes) {
        return lanes == 16 && (type == GgmlType.Q4_0 || type == GgmlType.Q4_K);
    }

    /** Whether {@link #dotQ8} has a kernel for weights of {@code type}: Q8_0, Q4_0, Q4_K and Q6_K. */
    static boolean hasIntegerDot(GgmlType type) {
        return Q8Activations.blockSize(type) != 0;
    }

    /** Bytes of one activation row of {@code n} elements quantized by {@link #quantizeActivations}. */
    static long activationRowBytes(int n) {
        return Q8Activations.rowBytes(n);
    }

    /**
     * Quantizes activations {@code x[xOff, xOff + n)} to 8-bit integers with one scale per block, as the integer
     * dot product with weights of {@code weightType} takes them (32-element blocks for Q8_0 and Q4_0, 256 for Q4_K
     * and Q6_K), into {@link #activationRowBytes activationRowBytes(n)} bytes of {@code qa} at byte {@code qaOff}.
     * Both twins share one scalar implementation (see {@code Q8Activations}).
     */
    default void quantizeActivations(GgmlType weightType, MemorySegment x, long xOff, int n,
                                     MemorySegment qa, long qaOff) {
        Q8Activations.quantize(weightType, x, xOff, n, qa, qaOff);
    }

    /**
     * Integer dot products of one quantized weight row ({@code k} elements of {@code type} at byte {@code wOff} of
     * {@code w}) with {@code rows} quantized activation rows ({@link #quantizeActivations}, row {@code r} at byte
     * {@code qaOff + r · qaStride} of {@code qa}), into {@code c[cOff + r · ldc]} (floats).
     *
     * <p>Each result is defined lane by lane, whatever the number of rows or the tile it falls in. With {@code L =
     * lanes()}, element {@code i} of a weight block belongs to lane {@code i mod L}. Per block (32 elements for
     * Q8_0/Q4_0, 256 for Q4_K/Q6_K) every lane holds the exact integer {@code Σ sc(i)·q(i)·a(i)} over its elements,
     * where {@code q} is the weight quant (Q4_0: nibble − 8; Q4_K: nibble; Q6_K: 6 bits − 32), {@code sc} its
     * sub-block scale (1 for Q8_0/Q4_0) and {@code a} the activation quant; the lane's float accumulator then
     * becomes {@code fma((float) lane, dw·da, acc)} ({@code dw} the weight block's scale as ggml decodes it,
     * {@code da} the activation block's), blocks in increasing order. The accumulators fold pairwise
     * ({@code s[i] += s[i + h]} for {@code h = L/2, …, 1}) to lane 0. Q4_K subtracts its minimums as one scalar
     * chain, {@code m = fma(dmin·da, (float) Σ min_j·sum_j(a), m)} per block, from the folded sum.
     */
    void dotQ8(GgmlType type, MemorySegment w, long wOff, int k, MemorySegment qa, long qaOff, long qaStride,
               int rows, MemorySegment c, long cOff, long ldc);

    /**
     * Two weight rows (at bytes {@code wOff0} and {@code wOff1} of {@code w}) against one quantized activation row:
     * {@code c[c0]} and {@code c[c1]} (floats) get exactly what {@link #dotQ8} with one activation row gives for
     * each weight row. The decode path: two rows far apart in the matrix keep two sequential memory streams in
     * flight where one row at a time keeps one, and the two rows share each activation load.
     */
    default void dotQ8Pair(GgmlType type, MemorySegment w, long wOff0, long wOff1, int k, MemorySegment qa,
                           long qaOff, MemorySegment c, long c0, long c1) {
        dotQ8(type, w, wOff0, k, qa, qaOff, 0, 1, c, c0, 1);
        dotQ8(type, w, wOff1, k, qa, qaOff, 0, 1, c, c1, 1);
    }
}
