package dev.ripcord.kv.wire;

/** A peer sent bytes that are not a valid frame; the connection is closed. Internal. */
public final class ProtocolException extends IllegalStateException {
    public ProtocolException(String message) {
        super(message);
    }
}
