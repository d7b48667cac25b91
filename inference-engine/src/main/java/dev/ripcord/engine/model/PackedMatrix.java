package dev.ripcord.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A projection matrix {@code W[rows][cols]} ({@code rows} = output features) repacked for the GEMM micro-kernel:
 * column panels of {@code panelWidth} output features, each stored input-major ({@code [cols][width]}), so the
 * kernel streams one contiguous block per panel and computes {@code y = x · Wᵀ} by broadcasting {@code x[k]}
 * against {@code W[j..j+width][k]}. The last panel may be narrower. Offsets are in floats.
 */
public record PackedMatrix(MemorySegment data, int rows, int cols, int panelWidth) implements Projection {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    @Override
    public int panels() {
        return (rows + panelWidth - 1) / panelWidth;
    }

    /** First float of panel {@code p}. */
    public long panelOffset(int p) {
        return (long) p * panelWidth * cols;
    }

    /** Output features in panel {@code p}. */
    public int panelCols(int p) {
        return Math.min(panelWidth, rows - p * panelWidth);
    }

    /** Copies row {@code row} ({@code cols} floats, as it was before packing) to {@code dst} from float {@code dstOff}. */
    public void copyRow(int row, MemorySegment dst, long dstOff) {
        int p = row / panelWidth;
        int width = panelCols(p);
        long src = panelOffset(p) + row % panelWidth;
        for (int k = 0; k < cols; k++) {
            dst.setAtIndex(F, dstOff + k, data.getAtIndex(F, src + (long) k * width));
        }
    }

    /** Packs a row-major {@code rows × cols} matrix into memory allocated from {@code arena}. */
    public static PackedMatrix pack(MemorySegment rowMajor, int rows, int cols, int panelWidth, Arena arena) {
        return packInto(rowMajor, rows, cols, panelWidth, arena.allocate(bytes(rows, cols), 64));
    }

    /** Bytes a packed {@code rows × cols} matrix takes. */
    public static long bytes(int rows, int cols) {
        return (long) rows * cols * Float.BYTES;
    }

    /** Packs a row-major {@code rows × cols} matrix into {@code data} ({@link #bytes} long). */
    public static PackedMatrix packInto(MemorySegment rowMajor, int rows, int cols, int panelWidth,
                                        MemorySegment data) {
        PackedMatrix m = new PackedMatrix(data, rows, cols, panelWidth);
        for (int p = 0; p < m.panels(); p++) {
            long base = m.panelOffset(p);
            int width = m.panelCols(p);
            for (int j = 0; j < width; j++) {
                long src = (long) (p * panelWidth + j) * cols;
                for (int k = 0; k < cols; k++) {
                    data.setAtIndex(F, base + (long) k * width + j, rowMajor.getAtIndex(F, src + k));
                }
            }
        }
        return m;
    }
}
