package dev.ripcord.gateway.generation;

import dev.ripcord.tokenizer.chat.JinjaChatTemplate;
import org.jspecify.annotations.Nullable;

/**
 * The engine's tokenizer and model limits as the OpenAI surface sees them; bound by whoever owns the engine.
 * Implementations must be thread-safe and must not block (calls happen on reactive worker threads).
 */
public interface TextCodec {

    /** Prompt text to token ids; the codec decides about BOS; special-token text is plain text. */
    int[] encode(String text);

    /**
     * As {@link #encode(String)}, but with {@code parseSpecial} the text of special tokens in {@code text} becomes
     * those tokens (a client that writes its own chat format and asks for it with {@code parse_special}).
     * Codecs without special tokens ignore it.
     */
    default int[] encode(String text, boolean parseSpecial) {
        return encode(text);
    }

    /**
     * A message's content made safe to render into a chat template whose output goes to {@link #encodeTemplated}:
     * special-token text in it stays plain text there (see the tokenizer's {@code Tokenizer.asPlainText}). The
     * identity for codecs that never parse special tokens.
     */
    default String asPlainText(String content) {
        return content;
    }

    /**
     * The chat template {@code /v1/chat/completions} renders messages with: an override file or the model's own; null
     * for the plain ChatML fallback ({@link ChatTemplate}).
     */
    default @Nullable JinjaChatTemplate chatTemplate() {
        return null;
    }

    /**
     * Encodes a prompt rendered by {@link #chatTemplate()}: special-token text (such as {@code <|eot_id|>}) becomes
     * those tokens and nothing is added, because the template writes BOS itself where the model wants it (as
     * transformers' {@code apply_chat_template(tokenize=True)} does); content that went through {@link #asPlainText}
     * stays plain text.
     */
    default int[] encodeTemplated(String prompt) {
        return encode(prompt);
    }

    /**
     * The beginning-of-sequence token {@link #encode} puts first, or -1 when it puts none: what
     * {@code /tokenize}'s {@code add_special_tokens} adds or leaves out.
     */
    default int bosToken() {
        return -1;
    }

    /** Valid token ids are {@code 0 .. vocabularySize() - 1}. */
    int vocabularySize();

    /** The context window, in tokens: prompt plus completion must fit in it. */
    int contextLength();

    /** The one served model id, e.g. {@code "ripcord-small"}. */
    String modelName();

    /** The server's upper bound for {@code max_tokens}. */
    int maxTokensLimit();

    /** A fresh incremental detokenizer for one generation; not shared between requests. */
    Detokenizer newDetokenizer();

    /**
     * The bytes {@code token} contributes to the text when it follows {@code previous} (-1 at the start), for the
     * per-token strings of logprobs; may be part of a UTF-8 character. The default decodes the token alone.
     */
    default byte[] tokenBytes(int previous, int token) {
        Detokenizer detokenizer = newDetokenizer();
        return (detokenizer.accept(token) + detokenizer.flush()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Turns a token stream back into text, one token at a time, never splitting a UTF-8 sequence. Used by one
     * request at a time; need not be thread-safe.
     */
    interface Detokenizer {

        /** Text that became complete with this token and was not returned before; {@code ""} if none. */
        String accept(int tokenId);

        /** Whatever is still pending at the end of the generation (incomplete bytes rendered as U+FFFD). */
        String flush();
    }
}
