package dev.ripcord.kv.transport.tcp;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.session.DefaultReceiveSession;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;

/**
 * What a connection ({@link SenderConnection}, {@link ReceiverConnection}) needs from its agent, and nothing
 * more: the handshake it sends, the lease and timeouts, the event loops, the receive-session lookup an ATTACH
 * needs, and the bookkeeping of connections opening and closing. Connections never see the agent itself.
 */
public interface ConnectionHost {

    /** The agent's name, for logs. */
    String agentName();

    /** Our HELLO: incarnation, pid, lease, host identity digest. */
    Frames.Hello hello();

    /** Peer silence tolerated before the connection is closed. */
    Duration lease();

    /** TCP connect plus handshake. */
    Duration connectTimeout();

    /** DATA frame size: fairness between sessions, abort stop point. */
    int maxPieceBytes();

    EventLoopGroup eventLoops();

    /** A connection read a frame of {@code type} (counted, for tests of the frames a transfer costs). */
    void frameReceived(FrameType type);

    /** A connection was closed because its peer fell silent past the lease (counted). */
    void leaseExpired();

    /** The live receive session {@code sessionId}, or null. */
    DefaultReceiveSession receiveSession(long sessionId);

    /**
     * Why receive session {@code sessionId} ended, if it was released after a request's cancel (and
     * {@code attachToken} is its token); null otherwise. See the agent's {@code CancelledSessions}.
     */
    AbortReason releasedForCancel(long sessionId, long attachToken);

    void opened(ReceiverConnection connection);

    void closed(ReceiverConnection connection);

    void closed(SenderConnection connection);

    /** The receiver released a shared-memory region: unmap it once no session uses it. */
    void regionRetired(long receiverIncarnation, long regionId);

    /** The connection to this receiver incarnation closed: unmap its files once no session uses them. */
    void receiverGone(long receiverIncarnation);
}
