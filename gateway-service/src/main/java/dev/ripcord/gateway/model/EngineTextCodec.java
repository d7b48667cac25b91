package dev.ripcord.gateway.model;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.tokenizer.BpeTokenizer;
import dev.ripcord.tokenizer.ByteTokenizer;
import dev.ripcord.tokenizer.IncrementalDetokenizer;
import dev.ripcord.tokenizer.Tokenizer;
import dev.ripcord.tokenizer.Tokenizers;
import dev.ripcord.tokenizer.chat.ChatTemplateException;
import dev.ripcord.tokenizer.chat.ChatTemplateLimits;
import dev.ripcord.tokenizer.chat.JinjaChatTemplate;
import org.jspecify.annotations.Nullable;

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
    private final @Nullable JinjaChatTemplate chatTemplate;

    EngineTextCodec(Tokenizer tokenizer, ServedShape config, String modelName, int maxTokens,
            @Nullable JinjaChatTemplate chatTemplate) {
        this.tokenizer = tokenizer;
        this.config = config;
        this.modelName = modelName;
        this.maxTokens = maxTokens;
        this.chatTemplate = chatTemplate;
    }

    /** Builds the codec the properties describe, with the ChatML fallback for chat. */
    public static EngineTextCodec from(ModelProperties properties) {
        return from(properties, new ChatTemplateProperties(null));
    }

    /**
     * Builds the codec the properties describe; fails with a message naming the file if one is unreadable or a chat
     * template does not parse. The chat template is the override file if one is given, else the model's own (GGUF
     * {@code tokenizer.chat_template}), else none (the ChatML fallback).
     */
    public static EngineTextCodec from(ModelProperties properties, ChatTemplateProperties chat) {
        ServedShape config;
        String defaultName;
        Tokenizer fileTokenizer = null;
        String modelTemplate = null;
        if (properties.checkpoint() != null) {
            Path file = properties.checkpoint();
            try {
                if (GgufFile.isGguf(file)) {
                    // A GGUF model carries its shape, its tokenizer and usually its chat template: metadata only.
                    try (GgufFile gguf = GgufFile.open(file)) {
                        config = ServedShape.ofGgufMetadata(file, gguf.metadata());
                        fileTokenizer = Tokenizers.fromGgufMetadata(gguf.metadata());
                        modelTemplate = Tokenizers.chatTemplate(gguf.metadata()).orElse(null);
                    } catch (IllegalArgumentException e) {
                        throw new IOException(file + ": " + e.getMessage(), e);
                    }
                } else {
                    config = ServedShape.ofLlama2cCheckpoint(file);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read checkpoint " + file, e);
            }
            defaultName = stripExtension(file.getFileName().toString());
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
        } else if (fileTokenizer != null) {
            tokenizer = fileTokenizer;
        } else {
            tokenizer = new ByteTokenizer(config.vocabSize());
        }
        String name = properties.modelName() != null ? properties.modelName() : defaultName;
        return new EngineTextCodec(tokenizer, config, name, properties.maxTokens(),
                chatTemplate(chat.chatTemplate(), modelTemplate, tokenizer, chat.templateLimits().toLimits()));
    }

    private static @Nullable JinjaChatTemplate chatTemplate(@Nullable Path overrideFile, @Nullable String modelTemplate,
            Tokenizer tokenizer, ChatTemplateLimits limits) {
        String source = modelTemplate;
        String origin = "the model's tokenizer.chat_template";
        if (overrideFile != null) {
            try {
                source = Files.readString(overrideFile);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read chat template " + overrideFile, e);
            }
            origin = overrideFile.toString();
        }
        if (source == null) {
            return null;
        }
        try {
            return JinjaChatTemplate.of(source, specialText(tokenizer, tokenizer.bos()),
                    specialText(tokenizer, tokenizer.eos()), limits);
        } catch (ChatTemplateException e) {
            throw new IllegalStateException("chat template from %s does not render: %s".formatted(origin,
                    e.getMessage()), e);
        }
    }

    private static @Nullable String specialText(Tokenizer tokenizer, int token) {
        return token < 0 ? null : tokenizer.tokenText(token);
    }

    @Override
    public @Nullable JinjaChatTemplate chatTemplate() {
        return chatTemplate;
    }

    /**
     * A templated prompt: special-token text becomes tokens and nothing is added (the template writes BOS where the
     * model wants it). Tokenizers that cannot parse special-token text (llama2.c's, the byte tokenizer) always get
     * BOS, as completions do, and a leading BOS text written by the template is taken as that BOS.
     */
    @Override
    public int[] encodeTemplated(String prompt) {
        if (tokenizer instanceof BpeTokenizer || tokenizer instanceof ByteTokenizer) {
            String bosText = tokenizer.tokenText(tokenizer.bos());
            String text = !bosText.isEmpty() && prompt.startsWith(bosText) ? prompt.substring(bosText.length())
                    : prompt;
            return tokenizer.encode(text, true);
        }
        return tokenizer.encode(prompt, false, true);
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    /** Prompts get a BOS token, as llama2.c's {@code generate} does, so worker and reference runs agree. */
    @Override
    public int[] encode(String text) {
        return tokenizer.encode(text, true);
    }

    /** With {@code parseSpecial}, special-token text becomes those tokens; BOS first as {@link #encode(String)}. */
    @Override
    public int[] encode(String text, boolean parseSpecial) {
        if (!parseSpecial || tokenizer instanceof BpeTokenizer || tokenizer instanceof ByteTokenizer) {
            return encode(text); // llama2.c's and the byte tokenizer have no special-token text to parse
        }
        int[] body = tokenizer.encode(text, false, true);
        int bos = tokenizer.bos();
        if (bos < 0) {
            return body;
        }
        int[] tokens = new int[body.length + 1];
        tokens[0] = bos;
        System.arraycopy(body, 0, tokens, 1, body.length);
        return tokens;
    }

    @Override
    public String asPlainText(String content) {
        return tokenizer.asPlainText(content);
    }

    @Override
    public int bosToken() {
        return tokenizer.bos();
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
    public byte[] tokenBytes(int previous, int token) {
        return tokenizer.tokenBytes(previous, token);
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
