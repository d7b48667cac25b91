package dev.ripcord.protocol;

import java.nio.ByteBuffer;

/**
 * The small payload prefill attaches to a transfer's done notification: the first generated token, sampled from
 * the prompt's last logits. Four bytes, big-endian.
 */
public final class TransferMetadata {

    private TransferMetadata() {
    }

    public static byte[] encodeFirstToken(int token) {
        return ByteBuffer.allocate(Integer.BYTES).putInt(token).array();
    }

    /** @throws IllegalArgumentException if {@code metadata} is not exactly one token */
    public static int decodeFirstToken(byte[] metadata) {
        if (metadata == null || metadata.length != Integer.BYTES) {
            throw new IllegalArgumentException("transfer metadata must be 4 bytes (the first token), got "
                    + (metadata == null ? "none" : metadata.length + " bytes"));
        }
        return ByteBuffer.wrap(metadata).getInt();
    }
}
