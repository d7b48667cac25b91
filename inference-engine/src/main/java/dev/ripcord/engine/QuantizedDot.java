package dev.ripcord.engine;

/**
 * Which forwards multiply quantized projections as integer dot products with activations quantized to 8 bits
 * (rather than in floats against dequantized weights). A numeric choice: engines that must agree bit for bit
 * (a prefill and a decode worker) take the same one.
 */
public enum QuantizedDot {
    /**
     * Decode steps (and a prefill chunk's output head) on the integer kernels, prefill chunks in floats on the
     * GEMM over transposed input panels: the default, each the faster for its shape. Under {@link KernelMode#VECTOR}
     * Q4_0 and Q4_K decode steps on 16 float lanes take the table kernels instead (floats).
     */
    DECODE,
    /** Every forward on the integer kernels, prefill too: prefilling a token then equals decoding it. Slower. */
    ALWAYS,
    /** Floats everywhere, summed in one order (prefill on dequantized panels): prefilling equals decoding. */
    NEVER
}
