package dev.ripcord.format.gguf;

import java.util.List;

/**
 * A metadata array to write: its element type and its values (each as {@link GgufWriter} accepts for that type;
 * nested arrays as {@code GgufArray}). Only the writer takes this; the reader returns plain lists.
 */
public record GgufArray(GgufValueType elementType, List<?> values) {
    public GgufArray {
        values = List.copyOf(values);
    }
}
