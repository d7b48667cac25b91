package dev.ripcord.engine.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** Packing keeps every element, and a row read back from the panels is the row that went in, bit for bit. */
class PackedMatrixTest {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    @Test
    void everyRowReadsBackExactlyIncludingTheNarrowLastPanel() {
        int rows = 37; // panels of 16, 16 and a last one of 5
        int cols = 24;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rowMajor = arena.allocate((long) rows * cols * Float.BYTES, 64);
            Random random = new Random(3);
            for (long i = 0; i < (long) rows * cols; i++) {
                rowMajor.setAtIndex(F, i, random.nextFloat() * 2 - 1);
            }
            PackedMatrix m = PackedMatrix.pack(rowMajor, rows, cols, 16, arena);
            MemorySegment out = arena.allocate((long) (cols + 3) * Float.BYTES, 64);
            for (int r = 0; r < rows; r++) {
                m.copyRow(r, out, 3);
                for (int k = 0; k < cols; k++) {
                    assertThat(Float.floatToRawIntBits(out.getAtIndex(F, 3 + k)))
                            .as("row %d col %d", r, k)
                            .isEqualTo(Float.floatToRawIntBits(rowMajor.getAtIndex(F, (long) r * cols + k)));
                }
            }
        }
    }
}
