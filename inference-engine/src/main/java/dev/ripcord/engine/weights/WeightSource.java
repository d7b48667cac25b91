package dev.ripcord.engine.weights;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

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

    /**
     * The tensor as the file stores it, when that is a ggml block format the engine computes with in place
     * (Q8_0, Q4_0, Q4_K, Q6_K): the engine then keeps a view of the mapping instead of an F32 copy. Empty (the
     * default) means {@link #read} it as F32.
     */
    default Optional<StoredTensor> stored(Tensor tensor, int layer) {
        return Optional.empty();
    }

    /** Query/key/value biases (qwen2) of {@code layer}: {@code tensor} is WQ, WK or WV; empty when the model has none. */
    default Optional<float[]> bias(Tensor tensor, int layer) {
        return Optional.empty();
    }

    /**
     * Inverse rotary frequencies {@code 1/θ_j} ({@code headSize/2} of them) when the model scales them; empty means
     * the plain {@code 1/ropeTheta^(2j/headSize)}.
     */
    default Optional<double[]> ropeInverseFrequencies() {
        return Optional.empty();
    }

    /**
     * The file the tensors are read from, when there is one: the engine may then keep its packed form in a
     * {@link dev.ripcord.engine.model.WeightCache} keyed by the file. Empty (the default) for generated weights.
     */
    default Optional<Path> sourceFile() {
        return Optional.empty();
    }

    /** A short description for logs and error messages (preset and seed, or checkpoint path). */
    String describe();
}
