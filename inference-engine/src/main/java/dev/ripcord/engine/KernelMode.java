package dev.ripcord.engine;

/** Which kernel implementation an engine runs; both give bit-identical results (same lane count). */
public enum KernelMode {
    /** Vector API kernels (the default). */
    VECTOR,
    /** The scalar twins: slower, for verification and for JVMs started without {@code jdk.incubator.vector}. */
    SCALAR
}
