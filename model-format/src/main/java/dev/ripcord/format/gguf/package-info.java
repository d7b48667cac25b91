/**
 * The GGUF model file container (ggml's format): {@link dev.ripcord.format.gguf.GgufFile} reads version 2 and 3
 * files, memory-mapping the tensor data through FFM; {@link dev.ripcord.format.gguf.GgufWriter} writes version 3.
 * This package knows the container only: what the tensors mean (architectures, quantized block layouts beyond their
 * sizes) is the engine's business, what the tokenizer keys mean the tokenizer's.
 */
package dev.ripcord.format.gguf;
