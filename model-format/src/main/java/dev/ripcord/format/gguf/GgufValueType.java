package dev.ripcord.format.gguf;

import java.util.Optional;

/**
 * The metadata value types of GGUF ({@code enum gguf_type}), with the ids the file stores.
 *
 * <p>How the reader maps them to Java (a contract other modules code against): every integer type
 * ({@code UINT8 … INT64}) is a {@link Long} (unsigned 64-bit values above {@link Long#MAX_VALUE} keep their bits, so
 * they read as negative); {@code FLOAT32} a {@link Float}; {@code FLOAT64} a {@link Double}; {@code BOOL} a
 * {@link Boolean}; {@code STRING} a {@link String} (UTF-8); {@code ARRAY} an unmodifiable {@link java.util.List} of
 * those, nested arrays as nested lists.
 */
public enum GgufValueType {
    UINT8(0, 1),
    INT8(1, 1),
    UINT16(2, 2),
    INT16(3, 2),
    UINT32(4, 4),
    INT32(5, 4),
    FLOAT32(6, 4),
    BOOL(7, 1),
    STRING(8, -1),
    ARRAY(9, -1),
    UINT64(10, 8),
    INT64(11, 8),
    FLOAT64(12, 8);

    private final int id;
    private final int size;

    GgufValueType(int id, int size) {
        this.id = id;
        this.size = size;
    }

    /** The id the file stores. */
    public int id() {
        return id;
    }

    /** Bytes one value takes, or -1 for the variable-length STRING and ARRAY. */
    int fixedSize() {
        return size;
    }

    /** True for the eight integer types (all read as {@link Long}). */
    public boolean isInteger() {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }

    /** The type with this id, or empty. */
    public static Optional<GgufValueType> byId(long id) {
        for (GgufValueType t : values()) {
            if (t.id == id) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }
}
