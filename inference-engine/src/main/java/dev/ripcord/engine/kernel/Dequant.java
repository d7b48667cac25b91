package dev.ripcord.engine.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.ripcord.format.gguf.GgmlType;

/**
 * Scalar dequantization of ggml's block formats: the reference the vector kernels are tested against, written from
 * {@code ggml-quants.c}'s {@code dequantize_row_*} with the same float operations in the same order (so every
 * element is bit-identical to ggml's, given ggml compiled without FP contraction):
 * <ul>
 *   <li>Q8_0 (34 bytes / 32): f16 {@code d}, 32 × int8 {@code q}; {@code y = q·d}.</li>
 *   <li>Q4_0 (18 bytes / 32): f16 {@code d}, 16 bytes; byte {@code j} holds element {@code j} in its low nibble and
 *       element {@code j+16} in its high nibble; {@code y = (nibble − 8)·d}.</li>
 *   <li>Q4_K (144 bytes / 256): f16 {@code d}, f16 {@code dmin}, 12 bytes of 6-bit scales and mins
 *       ({@code get_scale_min_k4}), 128 bytes of nibbles; per 64 elements, 32 bytes: low nibbles are the first 32
 *       (scale/min {@code 2i}), high nibbles the next 32 ({@code 2i+1}); {@code y = (d·sc)·q − dmin·m}.</li>
 *   <li>Q6_K (210 bytes / 256): {@code ql[128]}, {@code qh[64]}, int8 {@code scales[16]}, f16 {@code d} last; per
 *       128 elements, {@code q = (4 bits of ql | 2 bits of qh << 4) − 32}, {@code y = (d·sc)·q}.</li>
 * </ul>
 * F32, F16 and BF16 convert exactly.
 */
final class Dequant {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;

    private Dequant() {
    }

    static float f16(MemorySegment s, long byteOff) {
        return Float.float16ToFloat(s.get(H, byteOff));
    }

    static int u8(MemorySegment s, long byteOff) {
        return Byte.toUnsignedInt(s.get(ValueLayout.JAVA_BYTE, byteOff));
    }

    static void requireSupported(GgmlType type, int n) {
        switch (type) {
            case F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K -> {
            }
            default -> throw new IllegalArgumentException("no kernel for ggml type " + type);
        }
        if (n % type.blockSize() != 0) {
            throw new IllegalArgumentException(n + " elements is not a whole number of " + type + " blocks");
        }
    }

    /** Dequantizes blocks {@code [fromBlock, toBlock)} of a row starting at {@code src} byte offset {@code base}. */
    static void blocks(GgmlType type, MemorySegment src, long base, int fromBlock, int toBlock,
                       MemorySegment dst, long dstOff) {
        int bs = type.blockSize();
        for (int b = fromBlock; b < toBlock; b++) {
            long blk = base + (long) b * type.typeSize();
            long y = (dstOff + (long) b * bs) << 2;
            switch (type) {
                case F32 -> dst.set(F, y, src.get(F, blk));
                case F16 -> dst.set(F, y, f16(src, blk));
                case BF16 -> dst.set(F, y, Float.intBitsToFloat((src.get(H, blk) & 0xFFFF) << 16));
                case Q8_0 -> q8_0(src, blk, dst, y);
                case Q4_0 -> q4_0(src, blk, dst, y);
                case Q4_K -> q4_K(src, blk, dst, y);
                case Q6_K -> q6_K(src, blk, dst, y);
                default -> throw new IllegalArgumentException("no kernel for ggml type " + type);
            }
        }
    }

    static void q8_0(MemorySegment src, long blk, MemorySegment dst, long y) {
        float d = f16(src, blk);
        for (int j = 0; j < 32; j++) {
            dst.set(F, y + 4L * j, src.get(ValueLayout.JAVA_BYTE, blk + 2 + j) * d);
        }
    }

    static void q4_0(MemorySegment src, long blk, MemorySegment dst, long y) {
        float d = f16(src, blk);
        for (int j = 0; j < 16; j++) {
            int q = u8(src, blk + 2 + j);
            dst.set(F, y + 4L * j, ((q & 0x0F) - 8) * d);
            dst.set(F, y + 4L * (j + 16), ((q >> 4) - 8) * d);
        }
    }

    /** ggml's {@code get_scale_min_k4}: the 6-bit scale ({@code which = 0}) or min ({@code 1}) of sub-block j. */
    static int scaleMinK4(MemorySegment src, long scales, int j, int which) {
        if (j < 4) {
            return u8(src, scales + j + 4L * which) & 63;
        }
        int lowNibbles = u8(src, scales + j + 4);
        int high = u8(src, scales + j - 4 + 4L * which) >> 6;
        return (which == 0 ? lowNibbles & 0xF : lowNibbles >> 4) | (high << 4);
    }

    static void q4_K(MemorySegment src, long blk, MemorySegment dst, long y) {
        float d = f16(src, blk);
        float min = f16(src, blk + 2);
        long scales = blk + 4;
        long q = blk + 16;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
            float d1 = d * scaleMinK4(src, scales, is, 0);
            float m1 = min * scaleMinK4(src, scales, is, 1);
            float d2 = d * scaleMinK4(src, scales, is + 1, 0);
            float m2 = min * scaleMinK4(src, scales, is + 1, 1);
            for (int l = 0; l < 32; l++) {
                dst.set(F, y + 4L * (j + l), d1 * (u8(src, q + l) & 0xF) - m1);
            }
            for (int l = 0; l < 32; l++) {
                dst.set(F, y + 4L * (j + 32 + l), d2 * (u8(src, q + l) >> 4) - m2);
            }
        }
    }

    static void q6_K(MemorySegment src, long blk, MemorySegment dst, long y) {
        float d = f16(src, blk + 208);
        long ql = blk;
        long qh = blk + 128;
        long sc = blk + 192;
        for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int h = u8(src, qh + l);
                int q1 = ((u8(src, ql + l) & 0xF) | ((h & 3) << 4)) - 32;
                int q2 = ((u8(src, ql + l + 32) & 0xF) | (((h >> 2) & 3) << 4)) - 32;
                int q3 = ((u8(src, ql + l) >> 4) | (((h >> 4) & 3) << 4)) - 32;
                int q4 = ((u8(src, ql + l + 32) >> 4) | (((h >> 6) & 3) << 4)) - 32;
                long o = y + 4L * (n + l);
                dst.set(F, o, d * src.get(ValueLayout.JAVA_BYTE, sc + is) * q1);
                dst.set(F, o + 4 * 32, d * src.get(ValueLayout.JAVA_BYTE, sc + is + 2) * q2);
                dst.set(F, o + 4 * 64, d * src.get(ValueLayout.JAVA_BYTE, sc + is + 4) * q3);
                dst.set(F, o + 4 * 96, d * src.get(ValueLayout.JAVA_BYTE, sc + is + 6) * q4);
            }
        }
    }
}
