/**
 * Where weights come from: deterministic random weights for the presets, and llama2.c checkpoint files.
 *
 * <p>Every source yields tensors in llama2.c's layout (row-major, {@code [out][in]}, little-endian FP32); the
 * {@code model} package repacks them for its kernels. Internal to the engine.
 */
package dev.ripcord.engine.weights;
