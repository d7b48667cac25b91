package dev.ripcord.engine.weights;

import java.lang.foreign.MemorySegment;

import dev.ripcord.format.gguf.GgmlType;

/**
 * A weight matrix kept in its file's block format: {@code rows} rows (output features) of {@code cols} elements,
 * row {@code i} of the computation at byte {@code rowOrder[i] · rowBytes} of {@code data} (identity when
 * {@code rowOrder} is null; a permutation when the file's rows are in another order, e.g. qwen2's rotary halves).
 *
 * @param data a read-only view of the memory-mapped file; valid while the file is open
 */
public record StoredTensor(GgmlType type, MemorySegment data, int rows, int cols, int[] rowOrder) {
    public long rowBytes() {
        return type.byteSize(cols);
    }

    /** Byte offset of computation row {@code i}. */
    public long rowOffset(int i) {
        return (rowOrder == null ? i : rowOrder[i]) * rowBytes();
    }
}
