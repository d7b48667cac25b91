package dev.ripcord.engine;

/**
 * Which kernels an engine runs. {@link #VECTOR} and {@link #SCALAR} give bit-identical results (same lane count);
 * {@link #NATIVE} differs from them only in its decode steps over quantized matrices (its own integer
 * definition, see {@code dev.ripcord.engine.kernel.QuantRows}), and gives the same bits on every CPU.
 */
public enum KernelMode {
    /**
     * The native decode kernels (the default), the Vector API for everything else; where the build packaged no
     * native library or it did not load, the same as {@link #VECTOR}.
     */
    NATIVE,
    /** Vector API kernels. */
    VECTOR,
    /** The scalar twins: slower, for verification and for JVMs started without {@code jdk.incubator.vector}. */
    SCALAR
}
