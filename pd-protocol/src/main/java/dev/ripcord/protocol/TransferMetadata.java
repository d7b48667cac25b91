package dev.ripcord.protocol;

import java.nio.ByteBuffer;

/**
 * The small payload prefill attaches to a transfer's done notification: the first generated token, sampled from
 * the prompt's last logits, and when the request asked for them its {@link Logprobs}. Big-endian: the token (4
 * bytes); then, only with logprobs, the token's logprob (float), the number {@code n} of alternatives (int) and
 * {@code n} pairs of (token int, logprob float).
 */
public final class TransferMetadata {

    /** The first token and, when asked for, its logprobs (else null). */
    public record FirstToken(int token, Logprobs logprobs) {
    }

    private TransferMetadata() {
    }

    public static byte[] encodeFirstToken(int token) {
        return ByteBuffer.allocate(Integer.BYTES).putInt(token).array();
    }

    public static byte[] encodeFirstToken(int token, Logprobs logprobs) {
        if (logprobs == null) {
            return encodeFirstToken(token);
        }
        int n = logprobs.topTokens().length;
        ByteBuffer buffer = ByteBuffer.allocate(Integer.BYTES * 3 + n * 8).putInt(token).putFloat(logprobs.logprob())
                .putInt(n);
        for (int i = 0; i < n; i++) {
            buffer.putInt(logprobs.topTokens()[i]).putFloat(logprobs.topLogprobs()[i]);
        }
        return buffer.array();
    }

    /** @throws IllegalArgumentException if {@code metadata} is not exactly one token */
    public static int decodeFirstToken(byte[] metadata) {
        return decode(metadata).token();
    }

    /** @throws IllegalArgumentException if {@code metadata} is not one of the two layouts above */
    public static FirstToken decode(byte[] metadata) {
        if (metadata == null || metadata.length < Integer.BYTES) {
            throw new IllegalArgumentException("transfer metadata must start with 4 bytes (the first token), got "
                    + (metadata == null ? "none" : metadata.length + " bytes"));
        }
        ByteBuffer in = ByteBuffer.wrap(metadata);
        int token = in.getInt();
        if (!in.hasRemaining()) {
            return new FirstToken(token, null);
        }
        if (in.remaining() < 8) {
            throw new IllegalArgumentException("transfer metadata: " + metadata.length + " bytes is neither a token "
                    + "nor a token with logprobs");
        }
        float logprob = in.getFloat();
        int n = in.getInt();
        if (n < 0 || in.remaining() != n * 8L) {
            throw new IllegalArgumentException("transfer metadata: " + n + " alternatives in " + in.remaining()
                    + " bytes");
        }
        int[] ids = new int[n];
        float[] lps = new float[n];
        for (int i = 0; i < n; i++) {
            ids[i] = in.getInt();
            lps[i] = in.getFloat();
        }
        return new FirstToken(token, new Logprobs(logprob, ids, lps));
    }
}
