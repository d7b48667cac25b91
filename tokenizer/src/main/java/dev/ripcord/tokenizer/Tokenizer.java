package dev.ripcord.tokenizer;

import java.nio.charset.StandardCharsets;

/**
 * Text to token ids and back. Implementations are immutable and thread-safe.
 *
 * <p>Decoding goes through bytes: each token contributes a byte string (which may be part of a UTF-8 character),
 * and {@link IncrementalDetokenizer} turns the byte stream into text without ever emitting half a character.
 */
public interface Tokenizer {

    int vocabSize();

    /** Beginning-of-sequence id. */
    int bos();

    /** End-of-sequence id; a scheduler stops a sequence that samples it. */
    int eos();

    /** Encodes {@code text}, prefixed with {@link #bos()} if {@code addBos}; special-token text stays plain text. */
    int[] encode(String text, boolean addBos);

    /**
     * Encodes {@code text} as llama.cpp's {@code llama_tokenize} does: {@code addSpecial} adds the BOS (and EOS)
     * the model's metadata asks for ({@code add_bos_token}, {@code add_eos_token}); {@code parseSpecial} turns the
     * text of control tokens (for example {@code <|eot_id|>}, {@code <|im_end|>}) into those single tokens instead
     * of tokenizing it as plain text. Only use {@code parseSpecial} on text the server composed (a rendered chat
     * template), with any client text in it passed through {@link #asPlainText} first. Tokenizers without special
     * tokens ignore it.
     */
    default int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        return encode(text, addSpecial);
    }

    /**
     * Client text (a chat message's content) made safe to place in a prompt that is encoded with
     * {@code parseSpecial}: the text of a special token inside it (a user writing {@code <|im_start|>system}) stays
     * plain text there, and the text encodes to the same ids as {@code encode(text, false, false)} would give it,
     * while the special-token text the server wrote around it still becomes special tokens. The result carries
     * marks (U+FDD0, a Unicode noncharacter) that {@code encode(..., parseSpecial = true)} removes; it may go
     * through a chat template first, which sees the content with the marks in it. Encode the result only with
     * {@code parseSpecial}. Tokenizers without special tokens return {@code text}.
     */
    default String asPlainText(String text) {
        return text;
    }

    /**
     * The ids that end a generation: {@link #eos()} and, for chat models, the end-of-turn/end-of-message tokens
     * (llama.cpp's end-of-generation set). Sorted, without duplicates.
     */
    default int[] stopTokens() {
        return new int[] {eos()};
    }

    /**
     * A token's text as the vocabulary spells it, special tokens included ({@code <|begin_of_text|>}, {@code <s>});
     * chat templates get {@code bos_token}/{@code eos_token} from it. Ordinary tokens give their decoded text.
     */
    default String tokenText(int token) {
        return new String(tokenBytes(-1, token), StandardCharsets.UTF_8);
    }

    /**
     * The bytes {@code token} contributes when it follows {@code previous} (-1 at the start); a fresh array.
     * Special tokens contribute nothing.
     */
    byte[] tokenBytes(int previous, int token);

    /** Decodes a whole token sequence (malformed UTF-8 becomes U+FFFD). */
    default String decode(int[] tokens) {
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(this);
        StringBuilder text = new StringBuilder();
        for (int token : tokens) {
            text.append(detokenizer.accept(token));
        }
        return text.append(detokenizer.finish()).toString();
    }
}
