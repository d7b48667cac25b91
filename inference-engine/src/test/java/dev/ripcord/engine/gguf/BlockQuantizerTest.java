package dev.ripcord.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import dev.ripcord.engine.tools.BlockQuantizer;

/**
 * The converter's quantizers against ggml's reference rules ({@code quantize_row_q8_0_ref},
 * {@code quantize_row_q4_0_ref}): hand-computed blocks, and random rows against an independent implementation
 * here ({@link #q8Reference}, {@link #q4Reference}) compared byte for byte.
 */
class BlockQuantizerTest {

    /** Q8_0 by the rule as ggml states it, written differently: Math.round on |v| gives roundf's ties-away. */
    static byte[] q8Reference(float[] x) {
        byte[] out = new byte[x.length / 32 * 34];
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) {
                float a = Math.abs(x[32 * b + j]);
                amax = a > amax ? a : amax;
            }
            float d = amax / 127f;
            float id = d == 0f ? 0f : 1f / d;
            short h = Float.floatToFloat16(d);
            out[34 * b] = (byte) (h & 0xFF);
            out[34 * b + 1] = (byte) ((h >>> 8) & 0xFF);
            for (int j = 0; j < 32; j++) {
                float v = x[32 * b + j] * id;
                int q = Math.round(Math.abs(v));
                out[34 * b + 2 + j] = (byte) (v < 0 ? -q : q);
            }
        }
        return out;
    }

    /** Q4_0 by ggml's rule: signed max of largest magnitude, d = max/-8, q = min(15, trunc(x/d + 8.5)). */
    static byte[] q4Reference(float[] x) {
        byte[] out = new byte[x.length / 32 * 18];
        for (int b = 0; b < x.length / 32; b++) {
            int arg = 0;
            for (int j = 1; j < 32; j++) {
                if (Math.abs(x[32 * b + j]) > Math.abs(x[32 * b + arg])) {
                    arg = j;
                }
            }
            float max = x[32 * b + arg];
            float d = max / -8f;
            float id = d == 0f ? 0f : 1f / d;
            short h = Float.floatToFloat16(d);
            out[18 * b] = (byte) (h & 0xFF);
            out[18 * b + 1] = (byte) ((h >>> 8) & 0xFF);
            for (int j = 0; j < 16; j++) {
                int lo = Math.min(15, (int) (x[32 * b + j] * id + 8.5f));
                int hi = Math.min(15, (int) (x[32 * b + 16 + j] * id + 8.5f));
                out[18 * b + 2 + j] = (byte) (lo | hi << 4);
            }
        }
        return out;
    }

    @Test
    void q8_0RoundsHalfwayCasesAwayFromZeroWithScaleAmaxOver127() {
        float[] x = new float[32];
        x[0] = 127f;   // amax 127 -> d = 1 exactly (f16 0x3C00), id = 1
        x[1] = 0.5f;   // roundf(0.5) = 1
        x[2] = -2.5f;  // roundf(-2.5) = -3 (Math.round would give -2)
        x[3] = 1.49f;
        x[4] = -0.49f;
        byte[] q = BlockQuantizer.q8_0(x);
        assertThat(q).hasSize(34);
        assertThat(q[0]).isEqualTo((byte) 0x00);
        assertThat(q[1]).isEqualTo((byte) 0x3C);
        assertThat(new byte[] {q[2], q[3], q[4], q[5], q[6], q[7]}).containsExactly(127, 1, -3, 1, 0, 0);

        float[] zeros = new float[32];
        assertThat(BlockQuantizer.q8_0(zeros)).containsOnly(0);
    }

    @Test
    void q4_0KeepsTheSignOfTheLargestMagnitudeAndPacksElementJWithJPlus16() {
        float[] x = new float[32];
        x[0] = -8f;   // max by magnitude, negative: d = -8 / -8 = 1, id = 1
        x[1] = 7f;    // 7 + 8.5 = 15.5 -> 15
        x[2] = 7.9f;  // 16.4 -> 16 -> clamped to 15
        x[3] = -0.4f; // 8.1 -> 8
        x[16] = 0.6f; // 9.1 -> 9 (high nibble of byte 0)
        x[17] = -7.9f; // 0.6 -> 0
        byte[] q = BlockQuantizer.q4_0(x);
        assertThat(q).hasSize(18);
        assertThat(Float.float16ToFloat((short) ((q[0] & 0xFF) | q[1] << 8))).isEqualTo(1f);
        assertThat(q[2] & 0xFF).isEqualTo(0 | 9 << 4);   // element 0 -> 0, element 16 -> 9
        assertThat(q[3] & 0xFF).isEqualTo(15 | 0 << 4);  // element 1 -> 15, element 17 -> 0
        assertThat(q[4] & 0xF).isEqualTo(15);
        assertThat(q[5] & 0xF).isEqualTo(8);
        assertThat(q[6] & 0xF).isEqualTo(8);             // zero -> 0 * id + 8.5 -> 8

        float[] positive = new float[32];
        positive[5] = 8f;                                // positive max: d = -1, so x = 8 -> -8 + 8.5 -> 0
        byte[] p = BlockQuantizer.q4_0(positive);
        assertThat(Float.float16ToFloat((short) ((p[0] & 0xFF) | p[1] << 8))).isEqualTo(-1f);
        assertThat(p[2 + 5] & 0xF).isEqualTo(0);
    }

    @Test
    void randomRowsQuantizeToTheReferenceBytes() {
        SplittableRandom r = new SplittableRandom(3);
        for (int trial = 0; trial < 200; trial++) {
            float[] x = new float[32 * (1 + r.nextInt(8))];
            double scale = Math.pow(10, r.nextInt(7) - 4);
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) ((r.nextDouble() * 2 - 1) * scale);
                if (r.nextInt(20) == 0) {
                    x[i] = 0f;
                }
            }
            assertThat(BlockQuantizer.q8_0(x)).isEqualTo(q8Reference(x));
            assertThat(BlockQuantizer.q4_0(x)).isEqualTo(q4Reference(x));
        }
    }
}
