package dev.ripcord.engine.weights;

import dev.ripcord.engine.ModelConfig;

/**
 * The tensors of a Llama-style model, in llama2.c checkpoint order, each stored row-major as
 * {@code rows × cols} floats per layer ({@code rows} is the output dimension of a projection).
 */
public enum Tensor {
    TOKEN_EMBEDDING(false),
    RMS_ATT(true),
    WQ(true),
    WK(true),
    WV(true),
    WO(true),
    RMS_FFN(true),
    W1(true),
    W2(true),
    W3(true),
    RMS_FINAL(false),
    CLASSIFIER(false);

    private final boolean perLayer;

    Tensor(boolean perLayer) {
        this.perLayer = perLayer;
    }

    /** Whether the tensor exists once per layer (otherwise once per model, addressed as layer 0). */
    public boolean perLayer() {
        return perLayer;
    }

    public int rows(ModelConfig c) {
        return switch (this) {
            case TOKEN_EMBEDDING, CLASSIFIER -> c.vocabSize();
            case RMS_ATT, RMS_FFN, RMS_FINAL -> 1;
            case WQ, WO, W2 -> c.dim();
            case WK, WV -> c.kvDim();
            case W1, W3 -> c.hiddenDim();
        };
    }

    public int cols(ModelConfig c) {
        return switch (this) {
            case TOKEN_EMBEDDING, CLASSIFIER, RMS_ATT, RMS_FFN, RMS_FINAL, WQ, WK, WV, WO, W1, W3 -> c.dim();
            case W2 -> c.hiddenDim();
        };
    }

    /** Floats in one layer's instance of this tensor. */
    public long size(ModelConfig c) {
        return (long) rows(c) * cols(c);
    }

    /** Number of instances: {@code layers} for per-layer tensors, else 1. */
    public int count(ModelConfig c) {
        return perLayer ? c.layers() : 1;
    }
}
