package dev.ripcord.tokenizer;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Turns a stream of tokens into text as it is generated, one token at a time, without ever emitting a broken
 * UTF-8 sequence: bytes of an incomplete character are held back until the character completes. Bytes that can
 * never form a valid character become U+FFFD as soon as that is certain.
 *
 * <p>One instance per stream; not thread-safe.
 */
public final class IncrementalDetokenizer {
    private final Tokenizer tokenizer;
    private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
    private ByteBuffer pending = ByteBuffer.allocate(64);
    private final CharBuffer chars = CharBuffer.allocate(256);
    private int previous = -1;

    public IncrementalDetokenizer(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** Feeds one token; returns the text it completes (often empty while a multi-byte character is pending). */
    public String accept(int token) {
        byte[] bytes = tokenizer.tokenBytes(previous, token);
        previous = token;
        if (pending.remaining() < bytes.length) {
            ByteBuffer larger = ByteBuffer.allocate(Math.max(pending.capacity() * 2, pending.position() + bytes.length));
            pending.flip();
            larger.put(pending);
            pending = larger;
        }
        pending.put(bytes);
        return drain(false);
    }

    /** Ends the stream: any incomplete trailing character is emitted as U+FFFD. */
    public String finish() {
        String text = drain(true);
        StringBuilder rest = new StringBuilder(text);
        chars.clear();
        decoder.flush(chars);
        chars.flip();
        rest.append(chars);
        decoder.reset();
        previous = -1;
        return rest.toString();
    }

    /** Bytes held back because they do not yet form a complete character. */
    public int pendingBytes() {
        return pending.position();
    }

    private String drain(boolean endOfInput) {
        pending.flip();
        StringBuilder text = new StringBuilder();
        while (true) {
            chars.clear();
            CoderResult result = decoder.decode(pending, chars, endOfInput);
            chars.flip();
            text.append(chars);
            if (!result.isOverflow()) {
                break;
            }
        }
        pending.compact();
        return text.toString();
    }
}
