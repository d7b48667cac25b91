package dev.ripcord.kv;

import java.util.List;

/**
 * How a {@link SendSession}'s writes reach the receiver's pages: the TCP pump ({@link TcpPump}) or the
 * shared-memory copier ({@link ShmCopier}), chosen once per session by {@link TransferAgent#connect}. The session
 * keeps the state machine, the acknowledgements and the pins; the transport moves the bytes and decides when
 * COMPLETE may follow them.
 *
 * <p>Locking. Methods marked "monitor held" are called, and only called, with the session's monitor held: they
 * share the session's guarded state (so an abort sees every queued write). The others run without it.
 */
sealed interface Transport permits TcpPump, ShmCopier {

    /** TCP or SHM, for {@link SendSession#backend()} and the byte counters. */
    Backend backend();

    /** Monitor held: the session accepted {@code op}; queue it if this transport moves writes later. */
    void accepted(SendSession.WriteOp op);

    /** Moves {@code op}: TCP wakes the pump; shared memory copies it now, on the caller's thread. */
    void start(SendSession.WriteOp op);

    /**
     * Monitor held: {@code complete()} was called. Returns true when this transport writes COMPLETE itself, in
     * order behind the writes (TCP: the pump, after {@link #wake()}); false when the session writes it once no
     * write is in flight (shared memory: the copies run on the callers' threads).
     */
    boolean queueComplete();

    /** After {@link #queueComplete()} returned true: lets the pump run. */
    void wake();

    /** Monitor held: a write finished (its bytes left the source), {@code delivered} or dropped. */
    void finished(SendSession.WriteOp op, boolean delivered);

    /** Monitor held: the bytes COMPLETE announces (every write handed to the transport, or fully copied). */
    long bytesSent();

    /** Monitor held: the session aborts; removes and returns the writes no byte of which is in the transport. */
    List<SendSession.WriteOp> dropQueued();

    /** The session released: gives back what the transport held for it. */
    void release();
}
