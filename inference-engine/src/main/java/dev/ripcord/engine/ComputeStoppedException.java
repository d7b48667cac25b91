package dev.ripcord.engine;

/**
 * A {@link InferenceEngine#prefill prefill chunk} or a {@link InferenceEngine#decodeStep decode step} stopped at a
 * layer boundary or inside a layer ({@link #inside()}), because its sequence's stop was requested
 * ({@link Sequence#requestStop()}; for a decode step: every sequence of the batch; a step that goes on for some
 * leaves the others out one by one instead, see {@link InferenceEngine#STOPPED}). An expected condition (a client
 * went away), so it is cheap: no stack trace, no suppression.
 *
 * <p>What it leaves behind: the sequences are exactly as before the call ({@link Sequence#length()}, pending
 * token, logits, history), except that they may hold pages allocated for the stopped positions; the keys and values
 * layers {@code [0, layer)} (and, inside, part of layer {@code layer}) wrote for those positions lie beyond the
 * length and are never read. {@link
 * InferenceEngine#free} releases every page.
 */
public final class ComputeStoppedException extends RuntimeException {
    private final int layer;
    private final int layers;
    private final int tokens;
    private final boolean inside;

    ComputeStoppedException(String what, int layer, int layers, int tokens) {
        this(what, layer, layers, tokens, false);
    }

    ComputeStoppedException(String what, int layer, int layers, int tokens, boolean inside) {
        super("%s stopped %s layer %d of %d (%d tokens discarded)".formatted(what, inside ? "inside" : "at", layer,
                layers, tokens), null, false, false);
        this.layer = layer;
        this.layers = layers;
        this.tokens = tokens;
        this.inside = inside;
    }

    /**
     * The layer boundary where it stopped: layers {@code [0, layer)} ran, layer {@code layer} did not start. 0 means
     * nothing was computed; {@link #layers()} means every layer ran and only the output head was skipped. When
     * {@link #inside()}: the layer it abandoned part way (layers {@code [0, layer)} ran, layer {@code layer} started
     * and did not finish).
     */
    public int layer() {
        return layer;
    }

    /**
     * Whether it stopped inside {@link #layer()}, before one of its projection or attention work items, rather than
     * at the boundary before it (or inside the output head, {@code layer == layers}).
     */
    public boolean inside() {
        return inside;
    }

    /** The model's layer count. */
    public int layers() {
        return layers;
    }

    /** Positions (prefill: the chunk's tokens; decode: the batch's sequences) whose work was discarded. */
    public int tokens() {
        return tokens;
    }
}
