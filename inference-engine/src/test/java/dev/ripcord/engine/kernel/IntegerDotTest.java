package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The integer dot products of quantized weights with 8-bit activations ({@link Kernels#dotQ8}): the vector kernel
 * against its scalar twin bit for bit on random blocks (every bit pattern of the quants) for each type, any tile
 * of activation rows against one row at a time, exact integer-valued activations against the exact dot product,
 * and random activations within the bound their quantization error sets from the dequantize-then-dot path.
 */
class IntegerDotTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final Kernels VECTOR = Kernels.vector();
    static final Kernels SCALAR = Kernels.scalar(VECTOR.lanes());
    static final Arena ARENA = Arena.ofShared();
    static final GgmlType[] TYPES = {GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K};

    @AfterAll
    static void release() {
        ARENA.close();
    }

    static MemorySegment weights(SplittableRandom r, GgmlType type, int rows, int k, int pad) {
        byte[] data = QuantKernelTwinsTest.randomBlocks(r, type, rows * k / type.blockSize());
        MemorySegment w = ARENA.allocate(data.length + pad);
        MemorySegment.copy(MemorySegment.ofArray(data), 0, w, pad, data.length);
        return w;
    }

    /** {@code rows} activation rows of {@code k} floats, some blocks scaled far apart, one block all zero. */
    static MemorySegment activations(SplittableRandom r, int rows, int k) {
        MemorySegment x = ARENA.allocate((long) rows * k * 4, 64);
        for (int i = 0; i < rows * k; i++) {
            double scale = ((i / 32) % 5 == 3) ? 40 : ((i / 32) % 7 == 2 ? 0 : 1);
            x.setAtIndex(F, i, (float) ((r.nextDouble() * 2 - 1) * scale));
        }
        return x;
    }

    static MemorySegment quantize(GgmlType type, MemorySegment x, int rows, int k, long stride, int pad) {
        MemorySegment qa = ARENA.allocate(pad + rows * stride, 64);
        for (int i = 0; i < rows; i++) {
            SCALAR.quantizeActivations(type, x, (long) i * k, k, qa, pad + i * stride);
        }
        return qa;
    }

    @Test
    void vectorEqualsScalarBitForBitForEveryTypeAndTileOfRows() {
        SplittableRandom r = new SplittableRandom(31);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 40; trial++) {
                int k = type.blockSize() * (1 + r.nextInt(type.blockSize() == 32 ? 24 : 5));
                int rows = 1 + r.nextInt(9);
                int pad = r.nextInt(5);
                long stride = Kernels.activationRowBytes(k) + 2L * r.nextInt(3);
                MemorySegment w = weights(r, type, 1, k, pad);
                MemorySegment qa = quantize(type, activations(r, rows, k), rows, k, stride, 6);
                long ldc = 1 + r.nextInt(3);
                MemorySegment cv = ARENA.allocate(rows * ldc * 4 + 4, 64);
                MemorySegment cs = ARENA.allocate(rows * ldc * 4 + 4, 64);
                VECTOR.dotQ8(type, w, pad, k, qa, 6, stride, rows, cv, 1, ldc);
                SCALAR.dotQ8(type, w, pad, k, qa, 6, stride, rows, cs, 1, ldc);
                assertThat(cv.mismatch(cs)).as("%s k=%d rows=%d", type, k, rows).isEqualTo(-1L);
                // one row at a time (the decode tile) gives what the four-row tiles gave
                for (int i = 0; i < rows; i++) {
                    MemorySegment one = ARENA.allocate(4);
                    VECTOR.dotQ8(type, w, pad, k, qa, 6 + i * stride, stride, 1, one, 0, 1);
                    assertThat(Float.floatToRawIntBits(one.get(F, 0))).as("%s row %d alone", type, i)
                            .isEqualTo(Float.floatToRawIntBits(cv.getAtIndex(F, 1 + i * ldc)));
                }
            }
        }
    }

    /**
     * The decode path's pair of weight rows ({@link Kernels#dotQ8Pair}) gives, for each row, exactly the bits the
     * one-row kernel gives, in both twins, for rows at any distance (the second before the first included).
     */
    @Test
    void aPairOfWeightRowsGivesExactlyWhatEachRowGivesAlone() {
        SplittableRandom r = new SplittableRandom(47);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 40; trial++) {
                int k = type.blockSize() * (1 + r.nextInt(type.blockSize() == 32 ? 24 : 5));
                int rows = 2 + r.nextInt(7);
                int pad = r.nextInt(5);
                long rowBytes = type.byteSize(k);
                MemorySegment w = weights(r, type, rows, k, pad);
                int i0 = r.nextInt(rows);
                int i1 = (i0 + 1 + r.nextInt(rows - 1)) % rows;
                MemorySegment qa = quantize(type, activations(r, 1, k), 1, k, Kernels.activationRowBytes(k), 6);
                MemorySegment single = ARENA.allocate(8, 64);
                VECTOR.dotQ8(type, w, pad + i0 * rowBytes, k, qa, 6, 0, 1, single, 0, 1);
                VECTOR.dotQ8(type, w, pad + i1 * rowBytes, k, qa, 6, 0, 1, single, 1, 1);
                for (Kernels kernels : new Kernels[] {VECTOR, SCALAR}) {
                    MemorySegment pair = ARENA.allocate(12, 64);
                    kernels.dotQ8Pair(type, w, pad + i0 * rowBytes, pad + i1 * rowBytes, k, qa, 6, pair, 2, 0);
                    assertThat(pair.asSlice(8, 4).mismatch(single.asSlice(0, 4)))
                            .as("%s %s k=%d first row", kernels.name(), type, k).isEqualTo(-1L);
                    assertThat(pair.asSlice(0, 4).mismatch(single.asSlice(4, 4)))
                            .as("%s %s k=%d second row", kernels.name(), type, k).isEqualTo(-1L);
                }
            }
        }
    }

    /**
     * Activations that are integers in [-127, 127] with 127 in every block quantize exactly (scale 1), so the integer
     * dot product must equal the exact dot product of the dequantized weights with them, up to float rounding.
     */
    @Test
    void exactlyRepresentableActivationsGiveTheExactDotProduct() {
        SplittableRandom r = new SplittableRandom(32);
        for (GgmlType type : TYPES) {
            for (int trial = 0; trial < 20; trial++) {
                int k = type.blockSize() * (1 + r.nextInt(4));
                MemorySegment w = weights(r, type, 1, k, 0);
                MemorySegment x = ARENA.allocate(4L * k, 64);
                for (int i = 0; i < k; i++) {
                    x.setAtIndex(F, i, i % type.blockSize() == 5 ? 127 : r.nextInt(255) - 127);
                }
                float[] dequantized = new float[k];
                SCALAR.dequantize(type, w, 0, k, MemorySegment.ofArray(dequantized), 0);
                double exact = 0;
                double magnitude = 0;
                for (int i = 0; i < k; i++) {
                    exact += (double) dequantized[i] * x.getAtIndex(F, i);
                    magnitude += Math.abs((double) dequantized[i] * x.getAtIndex(F, i));
                }
                MemorySegment qa = quantize(type, x, 1, k, Kernels.activationRowBytes(k), 0);
                MemorySegment c = ARENA.allocate(4);
                VECTOR.dotQ8(type, w, 0, k, qa, 0, 0, 1, c, 0, 1);
                assertThat((double) c.get(F, 0)).as("%s k=%d", type, k)
                        .isCloseTo(exact, org.assertj.core.api.Assertions.within(1e-5 * magnitude + 1e-6));
            }
        }
    }

    /**
     * Random activations: each quantized activation is within half its block's step ({@code amax / 254}) of the
     * float, so the integer dot product is within {@code Σ |w_i| · amax(i) / 254} of the dequantize-then-dot
     * product (plus float rounding).
     */
    @Test
    void integerDotIsWithinTheActivationQuantizationBoundOfTheDequantizePath() {
        SplittableRandom r = new SplittableRandom(33);
        for (GgmlType type : TYPES) {
            double worst = 0;
            for (int trial = 0; trial < 30; trial++) {
                int k = type.blockSize() * (1 + r.nextInt(type.blockSize() == 32 ? 40 : 6));
                MemorySegment w = weights(r, type, 1, k, 0);
                MemorySegment x = activations(r, 1, k);
                float[] dequantized = new float[k];
                SCALAR.dequantize(type, w, 0, k, MemorySegment.ofArray(dequantized), 0);
                int bs = type.blockSize();
                double bound = 0;
                double magnitude = 0;
                for (int b = 0; b < k / bs; b++) {
                    double amax = 0;
                    for (int i = b * bs; i < (b + 1) * bs; i++) {
                        amax = Math.max(amax, Math.abs(x.getAtIndex(F, i)));
                    }
                    for (int i = b * bs; i < (b + 1) * bs; i++) {
                        bound += Math.abs(dequantized[i]) * amax / 254;
                        magnitude += Math.abs((double) dequantized[i] * x.getAtIndex(F, i));
                    }
                }
                float reference = VECTOR.dotQuantized(type, w, 0, k, x, 0);
                MemorySegment qa = quantize(type, x, 1, k, Kernels.activationRowBytes(k), 0);
                MemorySegment c = ARENA.allocate(4);
                VECTOR.dotQ8(type, w, 0, k, qa, 0, 0, 1, c, 0, 1);
                double diff = Math.abs(c.get(F, 0) - reference);
                assertThat(diff).as("%s k=%d", type, k).isLessThanOrEqualTo(bound * 1.001 + 1e-5 * magnitude + 1e-6);
                worst = Math.max(worst, diff / Math.max(magnitude, 1e-30));
            }
            System.out.printf("%s: integer dot vs dequantize path, worst |diff| / Σ|w·x| = %.2e%n", type, worst);
        }
    }

    @Test
    void activationsQuantizeToScaledIntegersRoundingHalfToEven() {
        int k = 32;
        MemorySegment x = ARENA.allocate(4L * k, 64);
        x.setAtIndex(F, 0, 254f);  // amax: scale 2
        x.setAtIndex(F, 1, 5f);    // 2.5 -> 2
        x.setAtIndex(F, 2, 7f);    // 3.5 -> 4
        x.setAtIndex(F, 3, -9f);   // -4.5 -> -4
        x.setAtIndex(F, 4, -254f); // -127
        MemorySegment qa = ARENA.allocate(Kernels.activationRowBytes(k), 64);
        VECTOR.quantizeActivations(GgmlType.Q8_0, x, 0, k, qa, 0);
        short[] q = qa.asSlice(0, 2L * k).toArray(ValueLayout.JAVA_SHORT);
        assertThat(q[0]).isEqualTo((short) 127);
        assertThat(q[1]).isEqualTo((short) 2);
        assertThat(q[2]).isEqualTo((short) 4);
        assertThat(q[3]).isEqualTo((short) -4);
        assertThat(q[4]).isEqualTo((short) -127);
        assertThat(q[5]).isZero();
        assertThat(qa.get(F, 2L * k)).isEqualTo(2f);
        assertThat(qa.get(ValueLayout.JAVA_INT_UNALIGNED, 2L * k + 4)).isEqualTo(127 + 2 + 4 - 4 - 127);
    }

    @Test
    void otherTypesAndPartialBlocksAreRefused() {
        MemorySegment s = ARENA.allocate(4096);
        assertThatThrownBy(() -> VECTOR.dotQ8(GgmlType.F32, s, 0, 256, s, 0, 0, 1, s, 0, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("F32");
        assertThatThrownBy(() -> SCALAR.quantizeActivations(GgmlType.Q4_K, s, 0, 32, s, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("whole number");
    }
}
