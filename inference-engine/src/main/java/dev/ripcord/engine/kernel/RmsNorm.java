package dev.ripcord.engine.kernel;

/** The scalar step both RMSNorm kernels share, so the normalising factor is computed one way only. */
final class RmsNorm {
    private RmsNorm() {
    }

    /** {@code 1 / sqrt(sumOfSquares / n + eps)} in float arithmetic (the sqrt is correctly rounded). */
    static float inverseRms(float sumOfSquares, int n, float eps) {
        float meanSquare = sumOfSquares / n + eps;
        return 1.0f / (float) Math.sqrt(meanSquare);
    }
}
