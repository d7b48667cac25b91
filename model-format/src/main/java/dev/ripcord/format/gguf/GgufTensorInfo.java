package dev.ripcord.format.gguf;

import java.util.Arrays;

/**
 * One tensor's entry in a GGUF file.
 *
 * @param name   the tensor's name, e.g. {@code blk.0.attn_q.weight}
 * @param dims   its shape as ggml's {@code ne}: {@code dims[0]} is the fastest-varying (contiguous) dimension, so a
 *               weight matrix of {@code rows × cols} (row-major, one row per output) has {@code dims = {cols, rows}}
 * @param type   its element type
 * @param offset byte offset of its data from the start of the file's tensor data section (a multiple of the alignment)
 */
public record GgufTensorInfo(String name, long[] dims, GgmlType type, long offset) {
    public GgufTensorInfo {
        dims = dims.clone();
    }

    /** A copy of the shape ({@code ne}, fastest first). */
    @Override
    public long[] dims() {
        return dims.clone();
    }

    /** Number of dimensions. */
    public int rank() {
        return dims.length;
    }

    /** {@code dims[i]}, or 1 beyond the rank (as ggml pads {@code ne} with ones). */
    public long dim(int i) {
        return i < dims.length ? dims[i] : 1;
    }

    /** Product of the dimensions. */
    public long elementCount() {
        long n = 1;
        for (long d : dims) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    /** Bytes of data: rows of {@code dims[0]} elements, each a whole number of blocks. */
    public long byteSize() {
        return type.byteSize(elementCount());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufTensorInfo t && name.equals(t.name) && Arrays.equals(dims, t.dims) && type == t.type && offset == t.offset;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return name + Arrays.toString(dims) + " " + type + " @" + offset;
    }
}
