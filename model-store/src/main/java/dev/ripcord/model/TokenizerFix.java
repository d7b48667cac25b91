package dev.ripcord.model;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Turns the older llama2.c tokenizer export packed with stories15M into upstream llama2.c's {@code tokenizer.bin}.
 *
 * <p>The file is little-endian: {@code int max_token_length}, then per token {@code float score},
 * {@code int length} and {@code length} bytes of piece. In the old export, ids 3..258 hold raw bytes instead of the
 * byte-fallback pieces {@code <0x00>}..{@code <0xFF>}, and bytes 0x80–0xFF are double UTF-8 encoded, so 204 pieces
 * clash with ordinary tokens. The fix rewrites the piece of each id {@code i} in 3..258 as {@code <0x%02X>} of
 * {@code i - 3}, updating its length and keeping its score; every other byte is copied unchanged.
 */
final class TokenizerFix {

    static final int FIRST_BYTE_TOKEN = 3;
    static final int BYTE_TOKENS = 256;

    private TokenizerFix() {
    }

    /** The fixed tokenizer; fails if {@code packaged} is not a well-formed llama2.c tokenizer file. */
    static byte[] fix(byte[] packaged) {
        ByteBuffer in = ByteBuffer.wrap(packaged).order(ByteOrder.LITTLE_ENDIAN);
        ByteArrayOutputStream out = new ByteArrayOutputStream(packaged.length + 4 * BYTE_TOKENS);
        ByteBuffer word = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        requireRemaining(in, 4, -1);
        out.write(packaged, 0, 4); // max_token_length: unchanged
        in.position(4);
        for (int id = 0; in.hasRemaining(); id++) {
            requireRemaining(in, 8, id);
            int scoreAt = in.position();
            in.getFloat();
            int length = in.getInt();
            if (length < 0) {
                throw new IllegalArgumentException("tokenizer: token " + id + " has a negative length " + length);
            }
            requireRemaining(in, length, id);
            out.write(packaged, scoreAt, 4); // score: unchanged, bit for bit
            if (id >= FIRST_BYTE_TOKEN && id < FIRST_BYTE_TOKEN + BYTE_TOKENS) {
                byte[] piece = "<0x%02X>".formatted(id - FIRST_BYTE_TOKEN).getBytes(StandardCharsets.US_ASCII);
                out.write(word.clear().putInt(piece.length).array(), 0, 4);
                out.write(piece, 0, piece.length);
            } else {
                out.write(packaged, scoreAt + 4, 4 + length);
            }
            in.position(in.position() + length);
        }
        return out.toByteArray();
    }

    private static void requireRemaining(ByteBuffer in, int bytes, int id) {
        if (in.remaining() < bytes) {
            throw new IllegalArgumentException("tokenizer: truncated " + (id < 0 ? "header" : "at token " + id));
        }
    }
}
