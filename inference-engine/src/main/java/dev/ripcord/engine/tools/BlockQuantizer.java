package dev.ripcord.engine.tools;

import dev.ripcord.format.gguf.GgmlType;

/**
 * ggml's reference quantizers ({@code ggml-quants.c}, "reference implementation for deterministic creation of model
 * files"), for writing GGUF files whose bytes equal what ggml itself would write:
 * <ul>
 *   <li>{@code quantize_row_q8_0_ref}: per 32 elements {@code amax = max|x|}, {@code d = amax/127},
 *       {@code id = d ? 1/d : 0}, stored {@code fp16(d)}, {@code q = roundf(x·id)} (half away from zero).</li>
 *   <li>{@code quantize_row_q4_0_ref}: {@code max} = the element of largest magnitude (the first one, with its
 *       sign), {@code d = max/−8}, {@code id = d ? 1/d : 0}, stored {@code fp16(d)},
 *       {@code q = min(15, (int8)(x·id + 8.5f))}; byte {@code j} = {@code q[j] | q[j+16] << 4}.</li>
 *   <li>F16: IEEE round-to-nearest-even ({@code GGML_FP32_TO_FP16}).</li>
 * </ul>
 * Arithmetic is float, as in C; the scale uses the unrounded {@code d}.
 */
public final class BlockQuantizer {
    private BlockQuantizer() {
    }

    /** Encodes {@code x} (a whole number of blocks) as {@code type} (F32, F16, Q8_0 or Q4_0), ggml's layout. */
    public static byte[] quantize(GgmlType type, float[] x) {
        return switch (type) {
            case F32 -> {
                byte[] out = new byte[x.length * 4];
                java.nio.ByteBuffer.wrap(out).order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(x);
                yield out;
            }
            case F16 -> {
                byte[] out = new byte[x.length * 2];
                for (int i = 0; i < x.length; i++) {
                    putF16(out, 2 * i, x[i]);
                }
                yield out;
            }
            case Q8_0 -> q8_0(x);
            case Q4_0 -> q4_0(x);
            default -> throw new IllegalArgumentException("no quantizer for " + type + " (supported: F32, F16, Q8_0, Q4_0)");
        };
    }

    static void putF16(byte[] out, int at, float v) {
        short h = Float.floatToFloat16(v);
        out[at] = (byte) h;
        out[at + 1] = (byte) (h >> 8);
    }

    /** C's {@code roundf}: halfway cases away from zero. */
    static float roundf(float x) {
        double r = Math.floor(Math.abs((double) x) + 0.5);
        return (float) Math.copySign(r, x);
    }

    public static byte[] q8_0(float[] x) {
        if (x.length % 32 != 0) {
            throw new IllegalArgumentException("Q8_0 needs whole blocks of 32, got " + x.length);
        }
        byte[] out = new byte[x.length / 32 * 34];
        for (int b = 0; b < x.length / 32; b++) {
            int base = b * 32;
            float amax = 0f;
            for (int j = 0; j < 32; j++) {
                amax = Math.max(amax, Math.abs(x[base + j]));
            }
            float d = amax / 127;
            float id = d != 0 ? 1.0f / d : 0.0f;
            putF16(out, b * 34, d);
            for (int j = 0; j < 32; j++) {
                out[b * 34 + 2 + j] = (byte) (int) roundf(x[base + j] * id);
            }
        }
        return out;
    }

    public static byte[] q4_0(float[] x) {
        if (x.length % 32 != 0) {
            throw new IllegalArgumentException("Q4_0 needs whole blocks of 32, got " + x.length);
        }
        byte[] out = new byte[x.length / 32 * 18];
        for (int b = 0; b < x.length / 32; b++) {
            int base = b * 32;
            float amax = 0f;
            float max = 0f;
            for (int j = 0; j < 32; j++) {
                float v = x[base + j];
                if (amax < Math.abs(v)) {
                    amax = Math.abs(v);
                    max = v;
                }
            }
            float d = max / -8;
            float id = d != 0 ? 1.0f / d : 0.0f;
            putF16(out, b * 18, d);
            for (int j = 0; j < 16; j++) {
                float x0 = x[base + j] * id;
                float x1 = x[base + 16 + j] * id;
                int q0 = Math.min(15, (byte) (int) (x0 + 8.5f));
                int q1 = Math.min(15, (byte) (int) (x1 + 8.5f));
                out[b * 18 + 2 + j] = (byte) (q0 | (q1 << 4));
            }
        }
        return out;
    }
}
