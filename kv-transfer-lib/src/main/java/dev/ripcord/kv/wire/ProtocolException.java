package dev.ripcord.kv.wire;

/** A peer sent bytes that are not a valid frame; the connection is closed. Internal. */
public final class ProtocolException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message) {
        super(message);
    }
}
