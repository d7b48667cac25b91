package dev.ripcord.kv;

/**
 * Notifications of a receive session. Called on transport threads (or the thread that aborts): keep them short and
 * never block; hand work to your own executor. Exceptions thrown here are logged and otherwise ignored.
 */
public interface ReceiveListener {
    /** A write of the sender landed: bytes {@code [dstOffset, dstOffset + length)} of the session's targets. */
    default void onChunkLanded(ReceiveSession session, long dstOffset, long length) {
    }

    /** The sender completed; every byte it sent has landed. */
    default void onCompleted(ReceiveSession session, byte[] metadata) {
    }

    /** The session was aborted. Its pages may be reused only once {@link ReceiveSession#released()} completes. */
    default void onAborted(ReceiveSession session, AbortReason reason) {
    }

    ReceiveListener NONE = new ReceiveListener() {
    };
}
