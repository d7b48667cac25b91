package dev.ripcord.kv.session;

import dev.ripcord.kv.Backend;
import java.util.List;

/**
 * How a send session's writes reach the receiver's pages: the TCP pump ({@code kv.transport.tcp.TcpPump}) or the
 * shared-memory copier ({@code kv.transport.shm.ShmCopier}), chosen once per session by the agent's
 * {@code connect}. The session keeps the state machine, the acknowledgements and the pins; the transport moves
 * the bytes, decides when COMPLETE may follow them, and reports back through the session's {@link Callbacks}.
 *
 * <p>Locking. Methods marked "monitor held" are called, and only called, with the session's monitor held: they
 * share the session's guarded state (so an abort sees every queued write). The others run without it.
 */
public interface Transport {

    /** What a transport calls back on the session it moves bytes for. Its monitor guards the queued writes. */
    interface Callbacks {
        long sessionId();

        String requestId();

        /** True once the session aborts: no piece may start any more. */
        boolean writesStopped();

        /** Monitor held, by the TCP pump: COMPLETE leaves now; its metadata. */
        byte[] completeLeaving();

        /** A piece's bytes left the source segment (written to the socket), or the write failed. */
        void pieceWritten(WriteOp op);

        /** Shared memory: the copy of {@code op} ended (SHM_WRITTEN already written if it was delivered). */
        void copied(WriteOp op, CopyOutcome outcome);

        /** Shared memory: the copy of {@code op} threw. */
        void copyFailed(WriteOp op, RuntimeException failure);
    }

    /** How a shared-memory copy ended. */
    enum CopyOutcome {
        /** Every byte is in the receiver's memory. */
        DELIVERED,
        /** The session stopped writing (it aborts) before every piece was copied. */
        STOPPED,
        /** The receiver fenced the session (abort or verdict): its ABORT is on its way. */
        FENCED
    }

    /** TCP or SHM, for the session's {@code backend()} and the byte counters. */
    Backend backend();

    /** Monitor held: the session accepted {@code op}; queue it if this transport moves writes later. */
    void accepted(WriteOp op);

    /** Moves {@code op}: TCP wakes the pump; shared memory copies it now, on the caller's thread. */
    void start(WriteOp op);

    /**
     * Monitor held: {@code complete()} was called. Returns true when this transport writes COMPLETE itself, in
     * order behind the writes (TCP: the pump, after {@link #wake()}); false when the session writes it once no
     * write is in flight (shared memory: the copies run on the callers' threads).
     */
    boolean queueComplete();

    /** After {@link #queueComplete()} returned true: lets the pump run. */
    void wake();

    /** Monitor held: a write finished (its bytes left the source), {@code delivered} or dropped. */
    void finished(WriteOp op, boolean delivered);

    /** Monitor held: the bytes COMPLETE announces (every write handed to the transport, or fully copied). */
    long bytesSent();

    /** Monitor held: the session aborts; removes and returns the writes no byte of which is in the transport. */
    List<WriteOp> dropQueued();

    /** The session released: gives back what the transport held for it. */
    void release();

    /** Bytes handed to the transport so far (tests of source pinning; 0 where writes are not queued). */
    default long bytesIssued() {
        return 0;
    }

    /** True while the transport's outbound buffer is over its high-water mark (tests of source pinning). */
    default boolean backedUp() {
        return false;
    }
}
