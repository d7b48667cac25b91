package dev.ripcord.engine;

/**
 * Shape of a Llama-style decoder, the same fields as a llama2.c checkpoint header plus the two constants llama2.c
 * hard-codes ({@code ropeTheta = 10000}, {@code normEps = 1e-5}).
 *
 * @param dim              width of the residual stream
 * @param hiddenDim        width of the SwiGLU MLP
 * @param layers           number of transformer blocks
 * @param heads            query heads; {@code dim / heads} is the head size and must be even (rotary pairs)
 * @param kvHeads          key/value heads (grouped-query attention); divides {@code heads}
 * @param vocabSize        rows of the embedding table and of the output projection
 * @param contextLength    the largest number of positions a sequence may hold
 * @param sharedClassifier whether the output projection is the embedding table (llama2.c's positive vocab size)
 * @param ropeTheta        base of the rotary frequencies
 * @param normEps          epsilon inside RMSNorm
 */
public record ModelConfig(int dim, int hiddenDim, int layers, int heads, int kvHeads, int vocabSize,
                          int contextLength, boolean sharedClassifier, float ropeTheta, float normEps) {

    public ModelConfig {
        Checks.requireArgument(dim > 0 && hiddenDim > 0 && layers > 0 && heads > 0 && kvHeads > 0
                        && vocabSize > 0 && contextLength > 0,
                "model dimensions must be positive: dim=%s hiddenDim=%s layers=%s heads=%s kvHeads=%s vocab=%s "
                        + "context=%s", dim, hiddenDim, layers, heads, kvHeads, vocabSize, contextLength);
        Checks.requireArgument(dim % heads == 0, "dim %s is not divisible by heads %s", dim, heads);
        Checks.requireArgument(heads % kvHeads == 0, "heads %s is not divisible by kvHeads %s", heads, kvHeads);
        Checks.requireArgument((dim / heads) % 2 == 0, "head size %s must be even for rotary pairs", dim / heads);
        Checks.requireArgument(ropeTheta > 0 && normEps > 0, "ropeTheta %s and normEps %s must be positive",
                ropeTheta, normEps);
    }

    /** A llama2.c-compatible configuration (theta 10000, eps 1e-5). */
    public static ModelConfig llama2c(int dim, int hiddenDim, int layers, int heads, int kvHeads, int vocabSize,
                                      int contextLength, boolean sharedClassifier) {
        return new ModelConfig(dim, hiddenDim, layers, heads, kvHeads, vocabSize, contextLength, sharedClassifier,
                10000.0f, 1e-5f);
    }

    public int headSize() {
        return dim / heads;
    }

    /** Width of one token's keys (or values) in one layer: {@code kvHeads · headSize}. */
    public int kvDim() {
        return kvHeads * headSize();
    }

    /** Query heads per key/value head. */
    public int groupSize() {
        return heads / kvHeads;
    }

    /** Number of weights, counting a shared classifier once. */
    public long parameterCount() {
        long perLayer = 2L * dim + 2L * dim * dim + 2L * dim * kvDim() + 3L * dim * hiddenDim;
        return (long) vocabSize * dim * (sharedClassifier ? 1 : 2) + layers * perLayer + dim;
    }

    /**
     * Floating-point operations (a multiply-add counts two) to process one token at position {@code position}
     * (0-based, so it attends to {@code position + 1} keys), excluding the output projection.
     */
    public double flopsPerToken(int position) {
        double matmuls = 2.0 * ((double) dim * dim * 2 + 2.0 * dim * kvDim() + 3.0 * dim * hiddenDim);
        double attention = 4.0 * dim * (position + 1.0); // q·k and p·v over every head
        return layers * (matmuls + attention);
    }

    /** Floating-point operations of the output projection for one token. */
    public double classifierFlops() {
        return 2.0 * dim * vocabSize;
    }
}
