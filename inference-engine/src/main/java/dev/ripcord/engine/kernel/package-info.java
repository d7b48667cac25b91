/**
 * Compute kernels over off-heap FP32 memory, and the worker pool that runs them in parallel.
 *
 * <p>Internal to the engine: the classes are public only because the {@code model} package calls them; nothing
 * outside {@code dev.ripcord.engine} should.
 *
 * <h2>Design note: determinism</h2>
 * Every kernel has a Vector API body and a scalar twin, and the two are <em>bit-identical</em>, not merely close:
 * <ul>
 *   <li>Products are accumulated with fused multiply-add in one fixed order per output element (the GEMM
 *       reduction runs over {@code k} in increasing order, whatever the tiling), so results do not depend on the
 *       tile a value falls in, the number of threads, the chunk size or the batch size.</li>
 *   <li>Horizontal reductions (sum of squares, softmax sum) keep {@link Kernels#lanes()} partial sums, one per
 *       lane, and fold them in lane order at the end. {@code reduceLanes(ADD)} is deliberately not used: its
 *       order is unspecified and differs between the interpreter and C2, which would make a warm engine and a
 *       cold one disagree in the last bit.</li>
 *   <li>{@code exp} is our own polynomial built from FMA, multiply and exponent-bit arithmetic, because the
 *       Vector API's {@code EXP} uses SVML when compiled and {@code Math.exp} when interpreted.</li>
 * </ul>
 * The price is that results depend on the lane count; two processes that must agree bit for bit (a prefill
 * worker and a decode worker) must run with the same {@code ripcord.engine.vectorBits} (the default, the
 * platform's preferred species, is the same on identical machines).
 *
 * <h2>Native kernels</h2>
 * {@link NativeKernels} (C through FFM, {@code src/main/c}) computes decode steps over quantized weights in its
 * own definition, written out by {@link NativeTwin} and described in {@link QuantRows}: no step of it depends on
 * a vector width, so every variant (generic C, AVX2, AVX-VNNI, AVX-512 VNNI) gives the same bits, and engines that
 * agree on lanes and on running native kernels agree bit for bit whatever the CPUs. {@link NativeLibrary} loads
 * the library from the jar after checking its recorded SHA-256, into a directory private to the user.
 *
 * <p>All offsets and strides passed to kernels count {@code float} elements, not bytes.
 */
package dev.ripcord.engine.kernel;
