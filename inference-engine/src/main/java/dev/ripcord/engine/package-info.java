/**
 * Ripcord's inference engine: a Llama-style transformer on the CPU (FFM memory, Vector API kernels) with chunked
 * prefill, a paged KV cache and batched decode.
 *
 * <p>The API is this package: {@link dev.ripcord.engine.InferenceEngine} (create from a {@link
 * dev.ripcord.engine.Preset} and seed, or load a llama2.c checkpoint), {@link dev.ripcord.engine.Sequence},
 * {@link dev.ripcord.engine.SamplingParams}, the KV page pool and its byte layout ({@link
 * dev.ripcord.engine.KvPagePool}, {@link dev.ripcord.engine.KvLayout}, {@link dev.ripcord.engine.KvPage}) and
 * the tokenizers. The sub-packages ({@code kernel}, {@code model}, {@code weights}) are internals.
 */
package dev.ripcord.engine;
