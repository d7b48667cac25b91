package dev.ripcord.engine.weights;

import java.lang.foreign.MemorySegment;

import dev.ripcord.engine.ModelConfig;

/** Supplies a model's tensors in llama2.c layout. Read once, at engine construction, by one thread. */
public interface WeightSource {

    ModelConfig config();

    /**
     * Writes {@code tensor} of {@code layer} (0 for model-wide tensors) row-major into {@code dst} starting at byte
     * 0; {@code dst} holds at least {@link Tensor#size} floats. For a shared classifier, {@link Tensor#CLASSIFIER}
     * yields the embedding table.
     */
    void read(Tensor tensor, int layer, MemorySegment dst);

    /** A short description for logs and error messages (preset and seed, or checkpoint path). */
    String describe();
}
