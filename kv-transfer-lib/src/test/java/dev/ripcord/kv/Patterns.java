package dev.ripcord.kv;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Test data whose every 8-byte word names its owner, so a stray byte can be traced to the session it came from. */
final class Patterns {
    static final long POISON = 0xDEAD_BEEF_CAFE_F00DL;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    private Patterns() {
    }

    /** The word at logical byte offset {@code at} (a multiple of 8) of the stream owned by {@code tag}. */
    static long word(long tag, long at) {
        long z = tag * 0x9E37_79B9_7F4A_7C15L + at;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        z ^= z >>> 31;
        return z == POISON ? z + 1 : z;
    }

    /** Fills {@code len} bytes (a multiple of 8) with tag's stream starting at its logical offset {@code from}. */
    static void fill(MemorySegment seg, long offset, long len, long tag, long from) {
        for (long i = 0; i < len; i += 8) {
            seg.set(WORD, offset + i, word(tag, from + i));
        }
    }

    static void poison(MemorySegment seg, long offset, long len) {
        seg.asSlice(offset, len).fill((byte) 0);
        for (long i = 0; i < len; i += 8) {
            seg.set(WORD, offset + i, POISON);
        }
    }

    /** Index of the first word that is not tag's stream, or -1. */
    static long firstMismatch(MemorySegment seg, long offset, long len, long tag, long from) {
        for (long i = 0; i < len; i += 8) {
            if (seg.get(WORD, offset + i) != word(tag, from + i)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Index of the first word holding a byte that is neither poison nor tag's own byte at that position, or -1.
     * Byte-wise, because an aborted TCP write can stop mid-word (reads split at any byte), leaving a word that is
     * part own stream, part poison.
     */
    static long firstForeign(MemorySegment seg, long offset, long len, long tag, long from) {
        for (long i = 0; i < len; i += 8) {
            long w = seg.get(WORD, offset + i);
            long own = word(tag, from + i);
            if (w != POISON && w != own) {
                for (int b = 0; b < 64; b += 8) {
                    long x = (w >>> b) & 0xff;
                    if (x != ((POISON >>> b) & 0xff) && x != ((own >>> b) & 0xff)) {
                        return i;
                    }
                }
            }
        }
        return -1;
    }

    /** Index of the first word that is not poison, or -1. */
    static long firstNonPoison(MemorySegment seg, long offset, long len) {
        for (long i = 0; i < len; i += 8) {
            if (seg.get(WORD, offset + i) != POISON) {
                return i;
            }
        }
        return -1;
    }
}
