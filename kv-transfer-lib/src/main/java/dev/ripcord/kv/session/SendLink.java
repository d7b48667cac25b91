package dev.ripcord.kv.session;

import dev.ripcord.kv.AbortReason;

/**
 * What a send session needs from the connection to its receiver: the control frames it writes, and letting go
 * of the connection when it releases. Implemented by the TCP transport's sender connection (shared memory too
 * carries its control frames over it).
 */
public interface SendLink {

    /** Shared memory: write {@code writeId} is in the receiver's memory. */
    void writeShmWritten(long sessionId, long writeId, long dstOffset, long length);

    /** No more writes: {@code total} bytes were sent; the receiver answers COMPLETED or ABORT. */
    void writeComplete(long sessionId, long total, byte[] metadata);

    void writeAbort(long sessionId, AbortReason reason);

    /** The answer to the receiver's ABORT, once this side drained. */
    void writeAbortAck(long sessionId);

    /** The session released: the connection forgets it. */
    void unbind(DefaultSendSession session);
}
