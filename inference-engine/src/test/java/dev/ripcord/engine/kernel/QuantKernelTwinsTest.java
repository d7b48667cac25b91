package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The quantized-weight kernels: dequantization of every supported ggml block type and the A·Bᵀ dot products,
 * vector against scalar twin (tolerance zero, as for every kernel: see {@link KernelTwinsTest}), each against an
 * independent reference written here from ggml's {@code dequantize_row_*}, and hand-computed blocks.
 */
public class QuantKernelTwinsTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final Kernels VECTOR = Kernels.vector();
    static final Kernels SCALAR = Kernels.scalar(VECTOR.lanes());
    static final Arena ARENA = Arena.ofShared();
    static final GgmlType[] TYPES = {GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0,
            GgmlType.Q4_K, GgmlType.Q6_K};

    @AfterAll
    static void release() {
        ARENA.close();
    }

    /** Random blocks whose f16 scales are finite (random bytes elsewhere: every bit pattern of the quants). */
    public static byte[] randomBlocks(SplittableRandom r, GgmlType type, int blocks) {
        byte[] b = new byte[blocks * type.typeSize()];
        r.nextBytes(b);
        for (int i = 0; i < blocks; i++) {
            int base = i * type.typeSize();
            switch (type) {
                case F16 -> putF16(b, base, (float) (r.nextDouble() * 4 - 2));
                case BF16 -> {
                    int bits = Float.floatToIntBits((float) (r.nextDouble() * 4 - 2));
                    b[base] = (byte) (bits >> 16);
                    b[base + 1] = (byte) (bits >> 24);
                }
                case F32 -> java.nio.ByteBuffer.wrap(b, base, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                        .putFloat((float) (r.nextDouble() * 4 - 2));
                case Q8_0, Q4_0 -> putF16(b, base, (float) (r.nextDouble() * 0.1));
                case Q4_K -> {
                    putF16(b, base, (float) (r.nextDouble() * 0.01));
                    putF16(b, base + 2, (float) (r.nextDouble() * 0.01));
                }
                case Q6_K -> putF16(b, base + 208, (float) (r.nextDouble() * 0.01));
                default -> throw new AssertionError(type);
            }
        }
        return b;
    }

    static void putF16(byte[] b, int at, float v) {
        short h = Float.floatToFloat16(v);
        b[at] = (byte) h;
        b[at + 1] = (byte) (h >> 8);
    }

    static float f16(byte[] b, int at) {
        return Float.float16ToFloat((short) ((b[at] & 0xFF) | (b[at + 1] << 8)));
    }

    static int u8(byte[] b, int at) {
        return b[at] & 0xFF;
    }

    /** ggml's dequantize_row_* for one row, written independently of {@code Dequant} (plain arrays). */
    static float[] reference(GgmlType type, byte[] x, int n) {
        float[] y = new float[n];
        int nb = n / type.blockSize();
        for (int i = 0; i < nb; i++) {
            int o = i * type.typeSize();
            int yo = i * type.blockSize();
            switch (type) {
                case F32 -> y[yo] = Float.intBitsToFloat((x[o] & 0xFF) | (x[o + 1] & 0xFF) << 8 | (x[o + 2] & 0xFF) << 16 | x[o + 3] << 24);
                case F16 -> y[yo] = f16(x, o);
                case BF16 -> y[yo] = Float.intBitsToFloat(((x[o] & 0xFF) | (x[o + 1] & 0xFF) << 8) << 16);
                case Q8_0 -> {
                    float d = f16(x, o);
                    for (int j = 0; j < 32; j++) {
                        y[yo + j] = x[o + 2 + j] * d;
                    }
                }
                case Q4_0 -> {
                    float d = f16(x, o);
                    for (int j = 0; j < 16; j++) {
                        int x0 = (u8(x, o + 2 + j) & 0x0F) - 8;
                        int x1 = (u8(x, o + 2 + j) >> 4) - 8;
                        y[yo + j] = x0 * d;
                        y[yo + j + 16] = x1 * d;
                    }
                }
                case Q4_K -> {
                    float d = f16(x, o);
                    float min = f16(x, o + 2);
                    int q = o + 16;
                    int is = 0;
                    int yi = yo;
                    for (int j = 0; j < 256; j += 64) {
                        int[] sm = scaleMin(x, o + 4, is);
                        float d1 = d * sm[0];
                        float m1 = min * sm[1];
                        sm = scaleMin(x, o + 4, is + 1);
                        float d2 = d * sm[0];
                        float m2 = min * sm[1];
                        for (int l = 0; l < 32; ++l) {
                            y[yi++] = d1 * (u8(x, q + l) & 0xF) - m1;
                        }
                        for (int l = 0; l < 32; ++l) {
                            y[yi++] = d2 * (u8(x, q + l) >> 4) - m2;
                        }
                        q += 32;
                        is += 2;
                    }
                }
                case Q6_K -> {
                    float d = f16(x, o + 208);
                    int ql = o;
                    int qh = o + 128;
                    int sc = o + 192;
                    int yi = yo;
                    for (int nn = 0; nn < 256; nn += 128) {
                        for (int l = 0; l < 32; ++l) {
                            int is = l / 16;
                            byte q1 = (byte) (((u8(x, ql + l) & 0xF) | (((u8(x, qh + l) >> 0) & 3) << 4)) - 32);
                            byte q2 = (byte) (((u8(x, ql + l + 32) & 0xF) | (((u8(x, qh + l) >> 2) & 3) << 4)) - 32);
                            byte q3 = (byte) (((u8(x, ql + l) >> 4) | (((u8(x, qh + l) >> 4) & 3) << 4)) - 32);
                            byte q4 = (byte) (((u8(x, ql + l + 32) >> 4) | (((u8(x, qh + l) >> 6) & 3) << 4)) - 32);
                            y[yi + l] = d * x[sc + is] * q1;
                            y[yi + l + 32] = d * x[sc + is + 2] * q2;
                            y[yi + l + 64] = d * x[sc + is + 4] * q3;
                            y[yi + l + 96] = d * x[sc + is + 6] * q4;
                        }
                        yi += 128;
                        ql += 64;
                        qh += 32;
                        sc += 8;
                    }
                }
                default -> throw new AssertionError(type);
            }
        }
        return y;
    }

    /** ggml's get_scale_min_k4. */
    static int[] scaleMin(byte[] q, int at, int j) {
        if (j < 4) {
            return new int[] {u8(q, at + j) & 63, u8(q, at + j + 4) & 63};
        }
        return new int[] {(u8(q, at + j + 4) & 0xF) | ((u8(q, at + j - 4) >> 6) << 4),
                (u8(q, at + j + 4) >> 4) | ((u8(q, at + j) >> 6) << 4)};
    }

    static float[] dequantize(Kernels k, GgmlType type, byte[] blocks, int n, int srcPad, int dstOff) {
        MemorySegment src = ARENA.allocate(blocks.length + srcPad);
        MemorySegment.copy(MemorySegment.ofArray(blocks), 0, src, srcPad, blocks.length);
        MemorySegment dst = ARENA.allocate((long) (n + dstOff) * 4, 64);
        k.dequantize(type, src, srcPad, n, dst, dstOff);
        return dst.asSlice((long) dstOff * 4).toArray(ValueLayout.JAVA_FLOAT);
    }

    @Test
    void dequantizeVectorEqualsScalarAndGgmlsReferenceBitForBitForEveryType() {
        SplittableRandom r = new SplittableRandom(7);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 20; trial++) {
                int blocks = 1 + r.nextInt(type.blockSize() == 1 ? 300 : 6);
                int n = blocks * type.blockSize();
                byte[] data = randomBlocks(r, type, blocks);
                int pad = r.nextInt(5);
                int off = r.nextInt(5);
                float[] expected = reference(type, data, n);
                float[] vector = dequantize(VECTOR, type, data, n, pad, off);
                float[] scalar = dequantize(SCALAR, type, data, n, pad, off);
                for (int i = 0; i < n; i++) {
                    assertThat(Float.floatToRawIntBits(scalar[i])).as("%s scalar element %d", type, i)
                            .isEqualTo(Float.floatToRawIntBits(expected[i]));
                    assertThat(Float.floatToRawIntBits(vector[i])).as("%s vector element %d", type, i)
                            .isEqualTo(Float.floatToRawIntBits(expected[i]));
                }
            }
        }
    }

    @Test
    void handBuiltQ8AndQ4BlocksDequantizeToTheirHandComputedValues() {
        byte[] q8 = new byte[34];
        putF16(q8, 0, 0.5f);
        q8[2] = 127;
        q8[3] = -128;
        q8[4] = 3;
        float[] y = dequantize(VECTOR, GgmlType.Q8_0, q8, 32, 0, 0);
        assertThat(y[0]).isEqualTo(63.5f);
        assertThat(y[1]).isEqualTo(-64f);
        assertThat(y[2]).isEqualTo(1.5f);
        assertThat(y[31]).isEqualTo(0f);

        byte[] q4 = new byte[18];
        putF16(q4, 0, 2f);
        q4[2] = (byte) 0xF0; // element 0: low nibble 0 -> (0-8)*2 = -16; element 16: high nibble 15 -> 14
        q4[3] = (byte) 0x98; // element 1: 8 -> 0; element 17: 9 -> 2
        y = dequantize(VECTOR, GgmlType.Q4_0, q4, 32, 0, 0);
        assertThat(y[0]).isEqualTo(-16f);
        assertThat(y[16]).isEqualTo(14f);
        assertThat(y[1]).isEqualTo(0f);
        assertThat(y[17]).isEqualTo(2f);
        assertThat(y[2]).isEqualTo(-16f); // zero bytes are nibbles 0: (0 - 8) * 2
    }

    @Test
    void handBuiltQ4KAndQ6KBlocksDequantizeToTheirHandComputedValues() {
        // Q4_K: d = 1, dmin = 0.5; sub-block 0 scale 3 min 2 (scales[0] = 3, scales[4] = 2); sub-block 5 (j >= 4):
        // scale = (scales[9] & 0xF) | (scales[1] >> 6) << 4, min = (scales[9] >> 4) | (scales[5] >> 6) << 4.
        byte[] k4 = new byte[144];
        putF16(k4, 0, 1f);
        putF16(k4, 2, 0.5f);
        k4[4] = 3;
        k4[8] = 2;
        k4[4 + 1] = (byte) 0b01_000000;  // high bits 01 -> scale of sub-block 5 gets +16
        k4[4 + 5] = (byte) 0b10_000000;  // high bits 10 -> min of sub-block 5 gets +32
        k4[4 + 9] = (byte) 0x74;         // sub-block 5: scale low 4, min low 7
        k4[16] = (byte) 0xA5;            // element 0 (sub-block 0, low nibble 5), element 32 (sub-block 1, high nibble 10)
        k4[16 + 64] = (byte) 0x30;       // qs for elements 128.. (j = 128): element 160 is sub-block 5's first (high nibble 3)
        float[] y = dequantize(VECTOR, GgmlType.Q4_K, k4, 256, 0, 0);
        assertThat(y[0]).isEqualTo(3f * 5 - 0.5f * 2);                 // 14
        assertThat(y[32]).isEqualTo(0f * 10 - 0.5f * 0);               // sub-block 1: scale 0, min 0
        assertThat(y[160]).isEqualTo((4 + 16) * 3f - 0.5f * (7 + 32)); // 60 - 19.5 = 40.5
        assertThat(dequantize(SCALAR, GgmlType.Q4_K, k4, 256, 0, 0)).containsExactly(y);

        // Q6_K: d = 0.25 (last two bytes), scales[0] = 2, scales[2] = -4; element 0: ql[0] low 0xF, qh[0] bits 0-1 = 3
        // -> q = 63 - 32 = 31 -> 0.25 * 2 * 31 = 15.5; element 32: ql[32] low nibble 0, qh[0] bits 2-3 = 0 -> -32,
        // scale index 2 -> 0.25 * -4 * -32 = 32.
        byte[] k6 = new byte[210];
        putF16(k6, 208, 0.25f);
        k6[192] = 2;
        k6[194] = -4;
        k6[0] = 0x0F;
        k6[128] = 0x03;
        y = dequantize(VECTOR, GgmlType.Q6_K, k6, 256, 0, 0);
        assertThat(y[0]).isEqualTo(15.5f);
        assertThat(y[32]).isEqualTo(32f);
        assertThat(dequantize(SCALAR, GgmlType.Q6_K, k6, 256, 0, 0)).containsExactly(y);
    }

    @Test
    void unsupportedTypesAndPartialBlocksAreRefused() {
        MemorySegment s = ARENA.allocate(1024);
        assertThatThrownBy(() -> VECTOR.dequantize(GgmlType.Q5_K, s, 0, 256, s, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Q5_K");
        assertThatThrownBy(() -> SCALAR.dequantize(GgmlType.Q8_0, s, 0, 16, s, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("whole number");
    }

    static MemorySegment random(SplittableRandom r, long n) {
        MemorySegment s = ARENA.allocate(Math.max(1, n) * 4, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (float) (r.nextDouble() * 2 - 1));
        }
        return s;
    }

    @Test
    void dotProductsVectorEqualsScalarBitForBitOnEveryTileShape() {
        SplittableRandom r = new SplittableRandom(11);
        for (int trial = 0; trial < 300; trial++) {
            int rows = 1 + r.nextInt(9);
            int cols = 1 + r.nextInt(9);
            int k = r.nextInt(5 * VECTOR.lanes() + 7);
            long lda = k + r.nextInt(5);
            long ldb = k + r.nextInt(5);
            long ldc = cols + r.nextInt(5);
            long aOff = r.nextInt(7);
            long bOff = r.nextInt(7);
            long cOff = r.nextInt(7);
            MemorySegment a = random(r, aOff + rows * lda);
            MemorySegment b = random(r, bOff + cols * ldb);
            MemorySegment cv = random(r, cOff + rows * ldc);
            MemorySegment cs = ARENA.allocate(cv.byteSize(), 64);
            cs.copyFrom(cv);
            VECTOR.dotProducts(a, aOff, lda, rows, k, b, bOff, ldb, cols, cv, cOff, ldc);
            SCALAR.dotProducts(a, aOff, lda, rows, k, b, bOff, ldb, cols, cs, cOff, ldc);
            assertThat(cv.mismatch(cs)).as("rows=%d cols=%d k=%d", rows, cols, k).isEqualTo(-1L);
        }
    }

    @Test
    void dotProductsComputeATimesBTransposed() {
        SplittableRandom r = new SplittableRandom(12);
        int rows = 5;
        int cols = 7;
        int k = 3 * VECTOR.lanes() + 5;
        MemorySegment a = random(r, (long) rows * k);
        MemorySegment b = random(r, (long) cols * k);
        MemorySegment c = ARENA.allocate((long) rows * cols * 4, 64);
        VECTOR.dotProducts(a, 0, k, rows, k, b, 0, k, cols, c, 0, cols);
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                double expected = 0;
                for (int p = 0; p < k; p++) {
                    expected += (double) a.getAtIndex(F, (long) i * k + p) * b.getAtIndex(F, (long) j * k + p);
                }
                assertThat((double) c.getAtIndex(F, (long) i * cols + j)).isCloseTo(expected, within(1e-4));
            }
        }
    }

    @Test
    void fusedQuantizedDotEqualsDequantizeThenDotProductsBitForBit() {
        SplittableRandom r = new SplittableRandom(13);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 30; trial++) {
                int blocks = 1 + r.nextInt(type.blockSize() == 1 ? 200 : 12);
                int k = blocks * type.blockSize();
                byte[] data = randomBlocks(r, type, blocks);
                MemorySegment w = ARENA.allocate(data.length + 3);
                MemorySegment.copy(MemorySegment.ofArray(data), 0, w, 3, data.length);
                MemorySegment x = random(r, k + 2);
                MemorySegment row = ARENA.allocate((long) k * 4, 64);
                SCALAR.dequantize(type, w, 3, k, row, 0);
                MemorySegment out = ARENA.allocate(4);
                SCALAR.dotProducts(x, 2, k, 1, k, row, 0, k, 1, out, 0, 1);
                float expected = out.get(F, 0);
                assertThat(Float.floatToRawIntBits(VECTOR.dotQuantized(type, w, 3, k, x, 2))).as("%s vector k=%d", type, k)
                        .isEqualTo(Float.floatToRawIntBits(expected));
                assertThat(Float.floatToRawIntBits(SCALAR.dotQuantized(type, w, 3, k, x, 2))).as("%s scalar", type)
                        .isEqualTo(Float.floatToRawIntBits(expected));
            }
        }
    }

    @Test
    void aPairOfRowsGivesExactlyWhatTheFusedDotGivesForEachRow() {
        SplittableRandom r = new SplittableRandom(17);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 20; trial++) {
                int blocks = 1 + r.nextInt(type.blockSize() == 1 ? 200 : 12);
                int k = blocks * type.blockSize();
                long rowBytes = (long) blocks * type.typeSize();
                byte[] data = randomBlocks(r, type, 3 * blocks);
                MemorySegment w = ARENA.allocate(data.length + 5);
                MemorySegment.copy(MemorySegment.ofArray(data), 0, w, 5, data.length);
                MemorySegment x = random(r, k + 1);
                for (Kernels kernels : new Kernels[]{VECTOR, SCALAR}) {
                    MemorySegment out = ARENA.allocate(4 * 8);
                    // rows 2 and 0, into floats 6 and 1 (far apart in the matrix and in the output)
                    kernels.dotQuantizedPair(type, w, 5 + 2 * rowBytes, 5, k, x, 1, out, 6, 1);
                    float row2 = SCALAR.dotQuantized(type, w, 5 + 2 * rowBytes, k, x, 1);
                    float row0 = SCALAR.dotQuantized(type, w, 5, k, x, 1);
                    assertThat(Float.floatToRawIntBits(out.getAtIndex(F, 6))).as("%s %s k=%d", kernels.name(), type, k)
                            .isEqualTo(Float.floatToRawIntBits(row2));
                    assertThat(Float.floatToRawIntBits(out.getAtIndex(F, 1))).as("%s %s k=%d", kernels.name(), type, k)
                            .isEqualTo(Float.floatToRawIntBits(row0));
                }
            }
        }
    }

    @Test
    void tableDecodeIsAPolicyOfTypeAndWidthAlone() {
        assertThat(Kernels.tableDecode(GgmlType.Q4_0, 16)).isTrue();
        assertThat(Kernels.tableDecode(GgmlType.Q4_K, 16)).isTrue();
        assertThat(Kernels.tableDecode(GgmlType.Q8_0, 16)).isFalse();
        assertThat(Kernels.tableDecode(GgmlType.Q6_K, 16)).isFalse();
        assertThat(Kernels.tableDecode(GgmlType.Q4_0, 8)).isFalse();
        assertThat(Kernels.tableDecode(GgmlType.Q4_K, 4)).isFalse();
    }
}
