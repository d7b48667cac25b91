package dev.ripcord.kv.session;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.shm.PeerProcess;

/**
 * What a receive session needs from the connection its sender attached over: the control frames it writes, and
 * being told when the connection dies (bind, unbind). Implemented by the TCP transport's receiver connection.
 */
public interface ReceiveLink {

    /** The sender's agent name, for logs. */
    String peerName();

    /**
     * The sender's process as its HELLO named it (pid and start time, so that a recycled pid is not taken for
     * it); null before the HELLO.
     */
    PeerProcess peerProcess();

    /** The connection reports its loss to {@code session} until it is unbound. */
    void bind(DefaultReceiveSession session);

    void unbind(DefaultReceiveSession session);

    /** Write {@code writeId} landed: {@code length} bytes. */
    void writeAck(long sessionId, long writeId, long length);

    /** The verdict: every byte landed. */
    void writeCompleted(long sessionId);

    void writeAbort(long sessionId, AbortReason reason);
}
