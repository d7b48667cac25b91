package dev.ripcord.engine.model;

import dev.ripcord.engine.weights.StoredTensor;

/**
 * A weight matrix used in place in its ggml block format (a view of the memory-mapped model file, never copied):
 * row-major, one row of {@code cols} elements per output feature. The matmul region takes {@link #PANEL} rows per
 * work item, dequantizes them into the worker's scratch and computes dot products against the input rows
 * ({@code Kernels.dotProducts}), so a prefill chunk pays the dequantization once per 128 rows. On the integer
 * kernels ({@code Kernels.dotQ8}) a work item is {@code Transformer.QUANT_ITEM_ROWS} rows instead: nothing is
 * dequantized, and one decode step streams the item's two halves side by side.
 */
public record QuantMatrix(StoredTensor tensor) implements Projection {
    /** Output features per work item on the dequantize path. */
    public static final int PANEL = 16;

    @Override
    public int rows() {
        return tensor.rows();
    }

    @Override
    public int cols() {
        return tensor.cols();
    }

    @Override
    public int panels() {
        return (rows() + PANEL - 1) / PANEL;
    }
}
