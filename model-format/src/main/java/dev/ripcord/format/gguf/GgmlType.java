package dev.ripcord.format.gguf;

import java.util.Optional;

/**
 * The tensor element types of ggml, with the numeric ids GGUF stores and their block geometry (elements per block,
 * bytes per block), exactly as {@code ggml.c}'s {@code type_traits} table defines them. Every id ggml has assigned is
 * listed so that a file using a type the engine cannot compute with is reported by name; the ids ggml retired
 * (4, 5, 31–33, 36–38) are absent and read as unknown.
 */
public enum GgmlType {
    F32(0, 1, 4),
    F16(1, 1, 2),
    Q4_0(2, 32, 18),
    Q4_1(3, 32, 20),
    Q5_0(6, 32, 22),
    Q5_1(7, 32, 24),
    Q8_0(8, 32, 34),
    Q8_1(9, 32, 36),
    Q2_K(10, 256, 84),
    Q3_K(11, 256, 110),
    Q4_K(12, 256, 144),
    Q5_K(13, 256, 176),
    Q6_K(14, 256, 210),
    Q8_K(15, 256, 292),
    IQ2_XXS(16, 256, 66),
    IQ2_XS(17, 256, 74),
    IQ3_XXS(18, 256, 98),
    IQ1_S(19, 256, 50),
    IQ4_NL(20, 32, 18),
    IQ3_S(21, 256, 110),
    IQ2_S(22, 256, 82),
    IQ4_XS(23, 256, 136),
    I8(24, 1, 1),
    I16(25, 1, 2),
    I32(26, 1, 4),
    I64(27, 1, 8),
    F64(28, 1, 8),
    IQ1_M(29, 256, 56),
    BF16(30, 1, 2),
    TQ1_0(34, 256, 54),
    TQ2_0(35, 256, 66),
    MXFP4(39, 32, 17);

    private final int id;
    private final int blockSize;
    private final int typeSize;

    GgmlType(int id, int blockSize, int typeSize) {
        this.id = id;
        this.blockSize = blockSize;
        this.typeSize = typeSize;
    }

    /** The id GGUF stores in a tensor info ({@code enum ggml_type}). */
    public int id() {
        return id;
    }

    /** Elements per block (1 for the plain types). */
    public int blockSize() {
        return blockSize;
    }

    /** Bytes per block. */
    public int typeSize() {
        return typeSize;
    }

    /** Bytes that {@code elements} elements take; {@code elements} must be a multiple of {@link #blockSize()}. */
    public long byteSize(long elements) {
        if (elements % blockSize != 0) {
            throw new IllegalArgumentException(elements + " elements is not a whole number of " + this + " blocks of " + blockSize);
        }
        return Math.multiplyExact(elements / blockSize, (long) typeSize);
    }

    /** The type with this ggml id, or empty for an id ggml never assigned or retired. */
    public static Optional<GgmlType> byId(long id) {
        for (GgmlType t : values()) {
            if (t.id == id) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }
}
