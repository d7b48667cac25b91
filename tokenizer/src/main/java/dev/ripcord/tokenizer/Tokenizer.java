package dev.ripcord.tokenizer;

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

    /** Encodes {@code text}, prefixed with {@link #bos()} if {@code addBos}. */
    int[] encode(String text, boolean addBos);

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
