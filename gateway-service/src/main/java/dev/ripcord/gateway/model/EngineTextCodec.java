package dev.ripcord.gateway.model;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Locale;

import dev.ripcord.gateway.openai.TextCodec;
import dev.ripcord.tokenizer.BpeTokenizer;
import dev.ripcord.tokenizer.ByteTokenizer;
import dev.ripcord.tokenizer.IncrementalDetokenizer;
import dev.ripcord.tokenizer.Tokenizer;

/**
 * The served model's tokenizer and limits, from the tokenizer library and the model file's header, without the
 * engine or any weights. The gateway tokenizes
 * (so it can count and limit tokens before any worker is involved) and detokenizes incrementally.
 */
public final class EngineTextCodec implements TextCodec {

    private final Tokenizer tokenizer;
    private final ServedShape config;
    private final String modelName;
    private final int maxTokens;

    EngineTextCodec(Tokenizer tokenizer, ServedShape config, String modelName, int maxTokens) {
        this.tokenizer = tokenizer;
        this.config = config;
        this.modelName = modelName;
        this.maxTokens = maxTokens;
    }

    /** Builds the codec the properties describe; fails with a message naming the file if one is unreadable. */
    public static EngineTextCodec from(ModelProperties properties) {
        ServedShape config;
        String defaultName;
        if (properties.checkpoint() != null) {
            try {
                config = ServedShape.ofLlama2cCheckpoint(properties.checkpoint());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read checkpoint " + properties.checkpoint(), e);
            }
            defaultName = stripExtension(properties.checkpoint().getFileName().toString());
        } else {
            config = ServedShape.preset(properties.preset());
            defaultName = "ripcord-" + properties.preset().trim().toLowerCase(Locale.ROOT);
        }
        Tokenizer tokenizer;
        if (properties.tokenizer() != null) {
            try {
                tokenizer = BpeTokenizer.load(properties.tokenizer(), config.vocabSize());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read tokenizer " + properties.tokenizer(), e);
            }
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
