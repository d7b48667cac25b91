package dev.ripcord.engine.model;

/**
 * A weight matrix {@code W[rows][cols]} ({@code rows} output features) as the matmul region consumes it: split into
 * {@link #panels()} groups of output features, each computed by one work item per block of input rows.
 */
public sealed interface Projection permits PackedMatrix, QuantMatrix {
    int rows();

    int cols();

    /** Number of output-feature groups. */
    int panels();
}
