package dev.ripcord.engine;

import java.util.Locale;

import dev.ripcord.tokenizer.ByteTokenizer;

/**
 * Built-in model shapes, served with deterministic random weights from a seed (nothing to download). Both use the
 * byte-level tokenizer's vocabulary.
 */
public enum Preset {
    /** For tests: 2 layers of width 64; a full forward takes well under a millisecond. About 0.1 M parameters. */
    TINY(ModelConfig.llama2c(64, 176, 2, 4, 2, ByteTokenizer.VOCAB_SIZE, 512, true)),
    /**
     * The local stack's default: 8 layers of width 512 (8 query heads, 4 key/value heads of 64), MLP 1376, context
     * 16 384. About 23 M parameters (93 MB); a full-context KV cache is 256 MiB. Prefilling 16K tokens takes tens
     * of seconds on 2 cores, so cancelling a long prompt matters.
     */
    SMALL(ModelConfig.llama2c(512, 1376, 8, 8, 4, ByteTokenizer.VOCAB_SIZE, 16_384, true));

    private final ModelConfig config;

    Preset(ModelConfig config) {
        this.config = config;
    }

    public ModelConfig config() {
        return config;
    }

    /** Lower-case name used in configuration ({@code tiny}, {@code small}). */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Looks a preset up by {@link #id()}, case-insensitively. */
    public static Preset byName(String name) {
        for (Preset p : values()) {
            if (p.name().equalsIgnoreCase(name.trim())) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown preset '%s'; known: tiny, small".formatted(name));
    }
}
