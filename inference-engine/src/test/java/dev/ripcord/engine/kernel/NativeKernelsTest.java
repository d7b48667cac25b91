package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import dev.ripcord.format.gguf.GgmlType;

/**
 * The native decode kernels against their scalar twin, bit for bit: every type, every variant this CPU runs,
 * block counts that leave every remainder of the eight-block groups, odd row counts and padded row strides; and
 * the twin itself against the float dot product of the dequantized row, within the bound its activation
 * quantization sets. Skipped where the build has no native library (the twin tests still run).
 */
class NativeKernelsTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final Arena ARENA = Arena.ofShared();
    static final GgmlType[] TYPES = {GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K};

    @AfterAll
    static void release() {
        ARENA.close();
    }

    /** {@code rows} rows of {@code k} random elements, {@code pad} spare bytes after each row. */
    static MemorySegment weights(SplittableRandom r, GgmlType type, int rows, int k, int pad) {
        long rowBytes = type.byteSize(k);
        MemorySegment w = ARENA.allocate(rows * (rowBytes + pad) + 1);
        for (int i = 0; i < rows; i++) {
            byte[] data = QuantKernelTwinsTest.randomBlocks(r, type, k / type.blockSize());
            MemorySegment.copy(MemorySegment.ofArray(data), 0, w, i * (rowBytes + pad), data.length);
        }
        return w;
    }

    static MemorySegment activationRow(SplittableRandom r, GgmlType type, int k, long pad, MemorySegment x) {
        for (int i = 0; i < k; i++) {
            double scale = ((i / 32) % 5 == 3) ? 40 : ((i / 32) % 7 == 2 ? 0 : 1);
            x.setAtIndex(F, i, (float) ((r.nextDouble() * 2 - 1) * scale));
        }
        MemorySegment qa = ARENA.allocate(pad + QuantRows.activationRowBytes(k));
        QuantRows.quantize(type, x, 0, k, qa, pad);
        return qa;
    }

    static int[] blockCounts(GgmlType type) {
        return type.blockSize() == 32 ? new int[] {1, 7, 8, 9, 15, 16, 17, 64, 67} : new int[] {1, 3, 8, 9, 22};
    }

    @Test
    void everyVariantEqualsTheTwinBitForBitForEveryTypeBlockTailAndRowCount() {
        assumeTrue(NativeKernels.available(), NativeKernels.unavailableReason());
        assertThat(NativeKernels.supported()).contains(NativeKernels.Isa.GENERIC);
        SplittableRandom r = new SplittableRandom(41);
        int compared = 0;
        for (NativeKernels.Isa isa : NativeKernels.supported()) {
            NativeKernels kernels = NativeKernels.of(isa);
            for (GgmlType type : TYPES) {
                for (int blocks : blockCounts(type)) {
                    int k = blocks * type.blockSize();
                    // pairs of rows side by side, an odd row left over, and a whole 64-row work item
                    for (int rows : blocks == 9 ? new int[] {1, 3, 7, 64} : new int[] {1, 3, 7}) {
                        int pad = rows == 3 ? 5 : 0;
                        long stride = type.byteSize(k) + pad;
                        MemorySegment w = weights(r, type, rows, k, pad);
                        MemorySegment x = ARENA.allocate(4L * k);
                        MemorySegment qa = activationRow(r, type, k, 3, x);
                        MemorySegment expected = ARENA.allocate(4L * rows);
                        MemorySegment actual = ARENA.allocate(4L * (rows + 2));
                        NativeTwin.INSTANCE.rows(type, w, 0, stride, rows, k, qa, 3, expected, 0);
                        kernels.rows(type, w, 0, stride, rows, k, qa, 3, actual, 1);
                        for (int i = 0; i < rows; i++) {
                            assertThat(Float.floatToRawIntBits(actual.getAtIndex(F, i + 1)))
                                    .as("%s %s k=%d row %d of %d", kernels.name(), type, k, i, rows)
                                    .isEqualTo(Float.floatToRawIntBits(expected.getAtIndex(F, i)));
                            compared++;
                        }
                        assertThat(actual.getAtIndex(F, 0)).isZero();
                        assertThat(actual.getAtIndex(F, rows + 1)).isZero();
                    }
                }
            }
        }
        assertThat(compared).isPositive();
    }

    @Test
    void theTwinIsTheDotProductOfTheDequantizedRowWithinTheActivationQuantizationError() {
        SplittableRandom r = new SplittableRandom(7);
        Kernels scalar = Kernels.scalar(8);
        for (GgmlType type : TYPES) {
            int k = 9 * 256;
            MemorySegment w = weights(r, type, 1, k, 0);
            MemorySegment x = ARENA.allocate(4L * k);
            MemorySegment qa = activationRow(r, type, k, 0, x);
            MemorySegment row = ARENA.allocate(4L * k);
            scalar.dequantize(type, w, 0, k, row, 0);
            double exact = 0;
            double bound = 0;
            int bs = Q8Activations.blockSize(type);
            for (int b = 0; b < k / bs; b++) {
                double amax = 0;
                for (int i = 0; i < bs; i++) {
                    amax = Math.max(amax, Math.abs(x.getAtIndex(F, (long) b * bs + i)));
                }
                for (int i = 0; i < bs; i++) {
                    long e = (long) b * bs + i;
                    exact += (double) row.getAtIndex(F, e) * x.getAtIndex(F, e);
                    // half a quantization step per activation, plus float rounding of the scale steps
                    bound += Math.abs(row.getAtIndex(F, e)) * (amax / 127 * 0.5 + Math.abs(x.getAtIndex(F, e)) * 1e-6);
                }
            }
            MemorySegment out = ARENA.allocate(4);
            NativeTwin.INSTANCE.rows(type, w, 0, type.byteSize(k), 1, k, qa, 0, out, 0);
            assertThat((double) out.getAtIndex(F, 0)).as("%s", type).isCloseTo(exact,
                    org.assertj.core.data.Offset.offset(bound * 1.01 + 1e-3));
        }
    }

    @Test
    void aVariantTheCpuCannotRunIsRefusedAndRowsOutsideTheSegmentsAreRejected() {
        assumeTrue(NativeKernels.available(), NativeKernels.unavailableReason());
        for (NativeKernels.Isa isa : NativeKernels.Isa.values()) {
            if (!NativeKernels.supported().contains(isa)) {
                assertThatThrownBy(() -> NativeKernels.of(isa)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(isa.label());
            }
        }
        NativeKernels best = NativeKernels.best();
        assertThat(best.isa()).isEqualTo(NativeKernels.supported().getLast());
        int k = 64;
        MemorySegment w = weights(new SplittableRandom(1), GgmlType.Q8_0, 2, k, 0);
        MemorySegment qa = ARENA.allocate(QuantRows.activationRowBytes(k));
        MemorySegment out = ARENA.allocate(8);
        assertThatThrownBy(() -> best.rows(GgmlType.Q8_0, w, 0, GgmlType.Q8_0.byteSize(k), 3, k, qa, 0, out, 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> best.rows(GgmlType.Q8_0, w, 0, GgmlType.Q8_0.byteSize(k), 2, k, qa, 0, out, 1))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> best.rows(GgmlType.F32, w, 0, 4L * k, 1, k, qa, 0, out, 0))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
