package dev.ripcord.gateway.model;

import java.io.IOException;
import java.io.UncheckedIOException;

import dev.ripcord.engine.ByteTokenizer;
import dev.ripcord.engine.BpeTokenizer;
import dev.ripcord.engine.IncrementalDetokenizer;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.Tokenizer;
import dev.ripcord.engine.weights.GgufWeights;
import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.gateway.generation.TextCodec;

/**
 * The served model's tokenizer and limits, from the engine library, without its weights. The gateway tokenizes
 * (so it can count and limit tokens before any worker is involved) and detokenizes incrementally.
 */
public final class EngineTextCodec implements TextCodec {

    private final Tokenizer tokenizer;
    private final ModelConfig config;
    private final String modelName;
    private final int maxTokens;

    EngineTextCodec(Tokenizer tokenizer, ModelConfig config, String modelName, int maxTokens) {
        this.tokenizer = tokenizer;
        this.config = config;
        this.modelName = modelName;
        this.maxTokens = maxTokens;
    }

    /** Builds the codec the properties describe; fails with a message naming the file if one is unreadable. */
    public static EngineTextCodec from(ModelProperties properties) {
        ModelConfig config;
        String defaultName;
        Tokenizer fileTokenizer = null;
        if (properties.checkpoint() != null) {
            try {
                if (GgufFile.isGguf(properties.checkpoint())) {
                    // A GGUF model carries its shape and (for tokenizer.ggml.model = llama) its tokenizer.
                    try (GgufWeights gguf = GgufWeights.open(properties.checkpoint())) {
                        config = gguf.config();
                        fileTokenizer = gguf.tokenizer().orElse(null);
                    }
                } else {
                    config = Llama2cCheckpoint.readHeader(properties.checkpoint());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read checkpoint " + properties.checkpoint(), e);
            }
            defaultName = stripExtension(properties.checkpoint().getFileName().toString());
        } else {
            Preset preset = Preset.byName(properties.preset());
            config = preset.config();
            defaultName = "ripcord-" + preset.id();
        }
        Tokenizer tokenizer;
        if (properties.tokenizer() != null) {
            try {
                tokenizer = BpeTokenizer.load(properties.tokenizer(), config.vocabSize());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read tokenizer " + properties.tokenizer(), e);
            }
        } else if (fileTokenizer != null) {
            tokenizer = fileTokenizer;
        } else {
            tokenizer = new ByteTokenizer(config.vocabSize());
        }
        String name = properties.modelName() != null ? properties.modelName() : defaultName;
        return new EngineTextCodec(tokenizer, config, name, properties.maxTokens());
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    /** Prompts get a BOS token, as llama2.c's {@code generate} does, so worker and reference runs agree. */
    @Override
    public int[] encode(String text) {
        return tokenizer.encode(text, true);
    }

    @Override
    public int vocabularySize() {
        return tokenizer.vocabSize();
    }

    @Override
    public int contextLength() {
        return config.contextLength();
    }

    @Override
    public String modelName() {
        return modelName;
    }

    @Override
    public int maxTokensLimit() {
        return maxTokens;
    }

    @Override
    public Detokenizer newDetokenizer() {
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(tokenizer);
        return new Detokenizer() {
            @Override
            public String accept(int tokenId) {
                return detokenizer.accept(tokenId);
            }

            @Override
            public String flush() {
                return detokenizer.finish();
            }
        };
    }

    private static String stripExtension(String file) {
        int dot = file.lastIndexOf('.');
        return dot > 0 ? file.substring(0, dot) : file;
    }

}
