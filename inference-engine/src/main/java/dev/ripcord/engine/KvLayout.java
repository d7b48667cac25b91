package dev.ripcord.engine;

/**
 * The byte layout of one KV-cache page. This is a wire format: kv-transfer-lib moves pages between processes as
 * raw bytes, so the layout is fixed and described here exactly.
 *
 * <p>A page holds the keys and values of {@code pageTokens} consecutive positions of one sequence, for every
 * layer and every key/value head, as little-endian IEEE-754 float32 (the engine refuses to run on a big-endian
 * platform). Page {@code i} of a sequence holds positions {@code [i·pageTokens, (i+1)·pageTokens)}; position
 * {@code p} lives in slot {@code s = p mod pageTokens}. With {@code H = headSize}, {@code G = kvHeads},
 * {@code T = pageTokens}, {@code F = 4} bytes:
 *
 * <pre>
 * layerBytes            = 2 · G · H · T · F
 * pageBytes             = layers · layerBytes + 64
 * key   (layer l, head g, dim d, slot s) at  l·layerBytes                 + ((g·H + d)·T + s)·F
 * value (layer l, head g, slot s, dim d) at  l·layerBytes + G·H·T·F       + ((g·T + s)·H + d)·F
 * trailer                                at  layers·layerBytes, 64 bytes, reserved
 * </pre>
 *
 * Keys are stored transposed (dimension-major, the slots of one dimension contiguous) and after the rotary
 * embedding; values are stored position-major. Both are the shapes the attention kernel streams. Slots at or
 * beyond the sequence's length hold unspecified bytes and are never read. The 64-byte trailer carries no data
 * (its contents are unspecified; a transfer may copy or skip it): it exists so that consecutive pages of the
 * pool, at stride {@code pageBytes}, do not start at the same offset modulo a large power of two, which made the
 * same (layer, head) block of every page compete for the same cache sets and cost attention a third of its
 * speed.
 *
 * @param pageTokens positions per page; a multiple of 16
 * @param layers     transformer layers
 * @param kvHeads    key/value heads per layer
 * @param headSize   floats per head
 */
public record KvLayout(int pageTokens, int layers, int kvHeads, int headSize) {

    public KvLayout {
        Checks.requireArgument(pageTokens > 0 && pageTokens % 16 == 0,
                "pageTokens must be a positive multiple of 16, got %s", pageTokens);
        Checks.requireArgument(layers > 0 && kvHeads > 0 && headSize > 0,
                "layers %s, kvHeads %s and headSize %s must be positive", layers, kvHeads, headSize);
    }

    public static KvLayout of(ModelConfig config, int pageTokens) {
        return new KvLayout(pageTokens, config.layers(), config.kvHeads(), config.headSize());
    }

    /** Floats in one layer's part of a page (keys then values). */
    public long layerFloats() {
        return 2L * kvHeads * headSize * pageTokens;
    }

    /** Bytes of the reserved trailer at the end of each page. */
    public static final int TRAILER_BYTES = 64;

    /** Floats in a page, trailer included (the pool's page stride in floats). */
    public long pageFloats() {
        return layers * layerFloats() + TRAILER_BYTES / Float.BYTES;
    }

    /** Bytes of key/value data in a page: {@code pageBytes() - TRAILER_BYTES}. */
    public long payloadBytes() {
        return layers * layerFloats() * Float.BYTES;
    }

    /** Bytes in a page, trailer included; page {@code p} of a pool starts at {@code p · pageBytes()}. */
    public long pageBytes() {
        return pageFloats() * Float.BYTES;
    }

    /** Byte offset, within a page, of the key of {@code (layer, kvHead, dim, slot)}. */
    public long keyOffset(int layer, int kvHead, int dim, int slot) {
        return (layer * layerFloats() + ((long) kvHead * headSize + dim) * pageTokens + slot) * Float.BYTES;
    }

    /** Byte offset, within a page, of the value of {@code (layer, kvHead, slot, dim)}. */
    public long valueOffset(int layer, int kvHead, int slot, int dim) {
        return (layer * layerFloats() + (long) kvHeads * headSize * pageTokens
                + ((long) kvHead * pageTokens + slot) * headSize + dim) * Float.BYTES;
    }

    /** Pages needed for {@code tokens} positions. */
    public int pagesFor(int tokens) {
        return (tokens + pageTokens - 1) / pageTokens;
    }
}
