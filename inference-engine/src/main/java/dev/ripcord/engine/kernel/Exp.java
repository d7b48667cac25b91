package dev.ripcord.engine.kernel;

/**
 * {@code exp(x)} for floats from FMA, multiply and exponent-bit arithmetic only, so the vector and scalar forms
 * agree bit for bit in every JIT state (Cephes' expf polynomial, about 2 ulp on the clamped range). The lane-wise
 * form is written out inside {@link VectorKernels#expAndSum} and {@link VectorKernels#swiglu}, operation for
 * operation the same as {@link #exp(float)}.
 *
 * <p>Inputs are clamped to [-87, 88], which keeps {@code 2^n} a normal float: results below {@code e^-87}
 * (≈ 1.6e-38) come out as about that value instead of underflowing, which is harmless for softmax and SiLU.
 */
final class Exp {
    static final float LO = -87.0f;
    static final float HI = 88.0f;
    static final float LOG2E = 1.44269504088896341f;
    /** 1.5·2^23: adding it rounds a float of magnitude below 2^22 to an integer, kept in the low mantissa bits. */
    static final float ROUNDER = 12582912.0f;
    static final int ROUNDER_BITS = 0x4B400000;
    static final float LN2_HI = 0.693359375f;
    static final float LN2_LO = -2.12194440e-4f;
    static final float P0 = 1.9875691500e-4f;
    static final float P1 = 1.3981999507e-3f;
    static final float P2 = 8.3334519073e-3f;
    static final float P3 = 4.1665795894e-2f;
    static final float P4 = 1.6666665459e-1f;
    static final float P5 = 5.0000001201e-1f;

    private Exp() {
    }

    static float exp(float x) {
        x = Math.min(Math.max(x, LO), HI);
        float t = Math.fma(x, LOG2E, ROUNDER);
        float n = t - ROUNDER;
        float r = Math.fma(n, -LN2_HI, x);
        r = Math.fma(n, -LN2_LO, r);
        float p = P0;
        p = Math.fma(p, r, P1);
        p = Math.fma(p, r, P2);
        p = Math.fma(p, r, P3);
        p = Math.fma(p, r, P4);
        p = Math.fma(p, r, P5);
        float r2 = r * r;
        float y = Math.fma(p, r2, r) + 1.0f;
        float pow2n = Float.intBitsToFloat((Float.floatToRawIntBits(t) - (ROUNDER_BITS - 127)) << 23);
        return y * pow2n;
    }
}
