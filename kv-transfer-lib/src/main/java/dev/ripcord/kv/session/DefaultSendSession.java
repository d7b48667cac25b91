package dev.ripcord.kv.session;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.SendSession;
import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.TransferAbortedException;
import dev.ripcord.kv.wire.Frames;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link SendSession} implementation: the prefill end of one request's KV transfer (the contract is on the
 * interface).
 *
 * <p>Design note. The session keeps the state machine, the acknowledgements and the source pins; its
 * {@link Transport} (the TCP pump or the shared-memory copier, chosen at {@code connect}) moves the bytes and
 * decides when COMPLETE may follow them. Everything it needs from its agent goes through a {@link SessionHost}.
 */
public final class DefaultSendSession implements SendSession, Transport.Callbacks {
    private static final Logger log = LoggerFactory.getLogger(DefaultSendSession.class);

    /** What the session tells the receiver once drained after an abort. */
    enum Notice { ABORT, ABORT_ACK, NONE }

    private final SessionHost host;
    private final ReceiveDescriptor descriptor;
    private final SendLink connection;
    private final Transport transport;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final CompletableFuture<SessionState> released = new CompletableFuture<>();
    private final long trackingId;
    private volatile boolean stopWrites;

    // guarded by this
    private SessionState state = SessionState.OPEN;
    private AbortReason abortReason;
    private long abortStartNanos;
    private final Map<Long, WriteOp> awaitingAck = new HashMap<>();
    private int opsInFlight; // writes that may still read source memory
    private long nextWriteId;
    private long bytesAcked;
    private boolean completeSent;
    private boolean completeInOrder; // the transport writes COMPLETE behind the writes (TCP)
    private byte[] metadata;
    private Notice notice = Notice.NONE;
    private boolean releaseClaimed;

    /**
     * @param transport makes this transfer session's transport (the agent chose the backend); called once, here
     */
    public DefaultSendSession(SessionHost host, ReceiveDescriptor descriptor, SendLink connection,
                              Function<Transport.Callbacks, Transport> transport) {
        this.host = host;
        this.descriptor = descriptor;
        this.connection = connection;
        this.transport = transport.apply(this);
        this.trackingId = LiveResources.track(LiveResources.Kind.SESSION, this::toString);
        tellListener(SessionState.OPEN, 0);
    }

    @Override
    public String requestId() {
        return descriptor.requestId();
    }

    /** The receiver's session id. */
    @Override
    public long sessionId() {
        return descriptor.sessionId();
    }

    @Override
    public ReceiveDescriptor descriptor() {
        return descriptor;
    }

    /** TCP or SHM: the backend chosen for this transfer session. */
    @Override
    public Backend backend() {
        return transport.backend();
    }

    @Override
    public synchronized SessionState state() {
        return state;
    }

    @Override
    public synchronized long bytesAcknowledged() {
        return bytesAcked;
    }

    @Override
    public synchronized Optional<AbortReason> abortReason() {
        return Optional.ofNullable(abortReason);
    }

    /** Completes when the receiver confirms COMPLETED; fails with {@link TransferAbortedException}. */
    @Override
    public CompletableFuture<Void> completion() {
        return completion;
    }

    /** Completes with the terminal state once RELEASED: no write of the session reads source memory any more. */
    @Override
    public CompletableFuture<SessionState> released() {
        return released;
    }

    /**
     * Pushes {@code [srcOffset, srcOffset + length)} of {@code source} to {@code [dstOffset, dstOffset + length)}
     * of the receiver's targets. Returns a future that completes when the receiver acknowledges the bytes landed,
     * or fails with {@link TransferAbortedException} (the session aborted, or the receiver fenced it first).
     *
     * @throws IllegalArgumentException spans out of bounds, or a region of another agent
     * @throws IllegalStateException    after {@code complete()}, or the source region is closed
     */
    @Override
    public CompletableFuture<Void> send(KvRegion source, long srcOffset, long length, long dstOffset) {
        Objects.requireNonNull(source, "source");
        Checks.requireArgument(length > 0 && srcOffset >= 0 && srcOffset <= source.byteSize() - length,
                "request %s: source span [%s, +%s) outside region of %s bytes", requestId(), srcOffset, length,
                source.byteSize());
        return post(source, List.of(new ByteRange(srcOffset, length)), length, dstOffset);
    }

    /**
     * Pushes several source spans of {@code source} as <em>one</em> write: they are gathered, in list order, into
     * the contiguous destination {@code [dstOffset, dstOffset + sum of lengths)} of the receiver's targets — e.g.
     * the pages one prefill chunk finished, scattered in the engine's pool, to the request's next logical pages.
     * The receiver acknowledges the batch once, when every byte of it landed: with shared memory the spans are
     * copied on the caller's thread (one fence bracket per {@code shmPieceBytes}), then one SHM_WRITTEN and one
     * WRITE_ACK cross the control connection, instead of one pair per span; with TCP each span goes out as DATA
     * pieces (no copy) and one WRITE_ACK answers the whole batch.
     *
     * <p>All or nothing for the receiver: a batch stopped by an abort or a fence (before its last piece) is never
     * announced or acknowledged, so the receiver counts none of its bytes as landed and the session can only abort.
     * The returned future completes on the acknowledgement, or fails with {@link TransferAbortedException}.
     *
     * @throws IllegalArgumentException no spans, a span out of bounds, the destination out of bounds, or a region
     *                                  of another agent
     * @throws IllegalStateException    after {@code complete()}, or the source region is closed
     */
    @Override
    public CompletableFuture<Void> sendBatch(KvRegion source, List<ByteRange> sourceSpans, long dstOffset) {
        Objects.requireNonNull(source, "source");
        Checks.requireArgument(!sourceSpans.isEmpty(), "request %s: a batch without spans", requestId());
        long total = 0;
        for (ByteRange span : sourceSpans) {
            Checks.requireArgument(span.end() <= source.byteSize(),
                    "request %s: source span %s outside region of %s bytes", requestId(), span, source.byteSize());
            total += span.length();
        }
        return post(source, List.copyOf(sourceSpans), total, dstOffset);
    }

    private CompletableFuture<Void> post(KvRegion target, List<ByteRange> spans, long length, long dstOffset) {
        DefaultKvRegion source = host.own(target);
        Checks.requireArgument(source != null, "request %s: region %s belongs to another agent",
                requestId(), target.id());
        Checks.requireArgument(dstOffset >= 0 && dstOffset <= descriptor.totalBytes() - length,
                "request %s: destination span [%s, +%s) outside the receiver's %s bytes", requestId(), dstOffset,
                length, descriptor.totalBytes());
        WriteOp op;
        synchronized (this) {
            if (state == SessionState.ABORTING || state == SessionState.ABORTED
                    || state == SessionState.RELEASED) {
                return CompletableFuture.failedFuture(new TransferAbortedException(requestId(), abortReason));
            }
            Checks.requireState(state == SessionState.OPEN || state == SessionState.TRANSFERRING,
                    "request %s: send() after complete() (session is %s)", requestId(), state);
            op = new WriteOp(nextWriteId + 1, source, spans, dstOffset);
            Checks.requireState(source.retain(op), "request %s: source region %s is closed", requestId(),
                    source.id());
            nextWriteId++;
            opsInFlight++;
            awaitingAck.put(op.writeId, op);
            transport.accepted(op);
        }
        transport.start(op); // with shared memory: the copy, on the caller's thread
        return op.acked;
    }

    /**
     * Like {@link #send(KvRegion, long, long, long)} for a slice of a registered region, e.g.
     * {@code pool.asSlice(page * pageBytes, pages * pageBytes)}.
     */
    @Override
    public CompletableFuture<Void> send(MemorySegment sourceSlice, long dstOffset) {
        SessionHost.RegionSpan span = host.regionContaining(sourceSlice);
        return send(span.region(), span.offset(), sourceSlice.byteSize(), dstOffset);
    }

    /**
     * No more writes: once every write has been handed over, the receiver checks it has all bytes and answers.
     * Returns {@link #completion()}.
     */
    @Override
    public CompletableFuture<Void> complete(byte[] metadata) {
        Objects.requireNonNull(metadata, "metadata");
        Checks.requireArgument(metadata.length <= Frames.MAX_METADATA, "request %s: %s bytes of metadata (max %s)",
                requestId(), metadata.length, Frames.MAX_METADATA);
        boolean inOrder;
        boolean sendNow = false;
        long total = 0;
        synchronized (this) {
            if (state == SessionState.ABORTING || state == SessionState.ABORTED
                    || state == SessionState.RELEASED) {
                return completion;
            }
            Checks.requireState(state == SessionState.OPEN || state == SessionState.TRANSFERRING,
                    "request %s: complete() called twice (session is %s)", requestId(), state);
            transition(SessionState.COMPLETING);
            this.metadata = metadata.clone();
            inOrder = transport.queueComplete();
            completeInOrder = inOrder;
            if (!inOrder && opsInFlight == 0) {
                completeSent = true;
                sendNow = true;
                total = transport.bytesSent();
            }
        }
        if (inOrder) {
            transport.wake();
        } else if (sendNow) {
            connection.writeComplete(sessionId(), total, this.metadata);
        }
        return completion;
    }

    /**
     * Aborts the session and tells the receiver once this side's writes have drained. Idempotent: true only for
     * the call that caused the abort.
     */
    @Override
    public boolean abort(String reason) {
        return abort(new AbortReason(AbortReason.Cause.REQUESTED, Side.SENDER, reason), Notice.ABORT, true);
    }

    /**
     * Aborts the session to carry out a request's cancel, and tells the peer why in the ABORT frame, typed: the
     * peer's futures fail with a {@link TransferAbortedException} whose reason's {@link AbortReason#cancellation()}
     * is this cancel. Otherwise as {@link #abort(String)}.
     */
    @Override
    public boolean abort(dev.ripcord.protocol.CancelReason reason, dev.ripcord.protocol.CancelSource source) {
        return abort(new AbortReason(AbortReason.Cause.REQUESTED, Side.SENDER, "cancelled",
                new AbortReason.Cancel(reason, source)), Notice.ABORT, true);
    }

    // ---- transport side (Transport.Callbacks) ------------------------------------------------------------------

    /** True once the session aborts: no piece may start any more. */
    @Override
    public boolean writesStopped() {
        return stopWrites;
    }

    /** Monitor held, by the TCP pump: COMPLETE leaves now; its metadata. */
    @Override
    public byte[] completeLeaving() {
        completeSent = true;
        return metadata;
    }

    /** Shared memory: the copy of {@code op} ended (SHM_WRITTEN already written if it was delivered). */
    @Override
    public void copied(WriteOp op, Transport.CopyOutcome outcome) {
        finishOp(op, outcome == Transport.CopyOutcome.DELIVERED);
        if (outcome == Transport.CopyOutcome.FENCED) {
            log.debug("request={} write {} stopped by the receiver's fence", requestId(), op.writeId);
        }
    }

    /** Shared memory: the copy of {@code op} threw. */
    @Override
    public void copyFailed(WriteOp op, RuntimeException failure) {
        finishOp(op, false);
        log.warn("request={} shared-memory copy failed", requestId(), failure);
        abort(new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.SENDER,
                "shared-memory copy failed: " + failure), Notice.ABORT, false);
    }

    /** TCP: true while the connection's outbound buffer is over its high-water mark (tests of source pinning). */
    public boolean transportBackedUp() {
        return transport.backedUp();
    }

    /** TCP: bytes handed to the transport so far (for tests of source pinning). */
    public long bytesIssued() {
        return transport.bytesIssued();
    }

    /** A piece's bytes left the source segment (written to the socket), or the write failed. */
    @Override
    public void pieceWritten(WriteOp op) {
        boolean finished;
        synchronized (this) {
            finished = op.pieceDone();
        }
        if (finished) {
            op.bytesOut(); // TCP: the kernel took the write's last piece
        }
        if (finished) {
            finishOp(op, true);
        }
    }

    private void finishOp(WriteOp op, boolean delivered) {
        boolean sendComplete = false;
        boolean failOp = false;
        long total = 0;
        byte[] meta = null;
        AbortReason reason;
        synchronized (this) {
            opsInFlight--;
            transport.finished(op, delivered);
            if (!delivered) {
                failOp = awaitingAck.remove(op.writeId) != null;
            }
            if (state == SessionState.COMPLETING && !completeInOrder && !completeSent && opsInFlight == 0) {
                completeSent = true; // the last write finished: COMPLETE follows every one of them
                sendComplete = true;
                total = transport.bytesSent();
                meta = metadata;
            }
            reason = abortReason;
        }
        op.source.unretain(op);
        if (failOp) {
            op.acked.completeExceptionally(new TransferAbortedException(requestId(), reason != null ? reason
                    : new AbortReason(AbortReason.Cause.REQUESTED, Side.RECEIVER, "fenced by the receiver")));
        }
        if (sendComplete) {
            connection.writeComplete(sessionId(), total, meta);
        }
        maybeRelease();
    }

    // ---- frames from the receiver (event loop) ------------------------------------------------------------------

    public void onAttached() {
        synchronized (this) {
            if (state == SessionState.OPEN) {
                transition(SessionState.TRANSFERRING);
            }
        }
    }

    public void onWriteAck(long writeId, long length) {
        WriteOp op;
        synchronized (this) {
            op = awaitingAck.remove(writeId);
            if (op != null) {
                bytesAcked += length;
            }
        }
        if (op != null) {
            boolean shm = transport.backend() == Backend.SHM;
            host.metrics().bytes(true, shm, length);
            host.metrics().writeAcknowledged(shm, op.postedNanos, op.outNanos(), System.nanoTime());
            op.acked.complete(null);
        }
    }

    public void onCompleted() {
        synchronized (this) {
            if (state != SessionState.COMPLETING) {
                return;
            }
            transition(SessionState.COMPLETED);
        }
        log.debug("request={} session={} completed", requestId(), sessionId());
        completion.complete(null);
        maybeRelease();
    }

    public void onRemoteAbort(AbortReason reason) {
        abort(reason, Notice.ABORT_ACK, false);
    }

    public void onConnectionLost(AbortReason reason) {
        abort(reason, Notice.NONE, false);
    }

    /** Agent shutdown. */
    public void abortForClose() {
        abort(new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.SENDER,
                "agent " + host.agentName() + " closing"), Notice.ABORT, false);
    }

    private boolean abort(AbortReason reason, Notice notice, boolean byUser) {
        List<WriteOp> dropped;
        List<WriteOp> unacked;
        synchronized (this) {
            if (!state.isAbortable() || byUser && completeSent) {
                return false;
            }
            transition(SessionState.ABORTING);
            abortReason = reason;
            abortStartNanos = System.nanoTime();
            stopWrites = true;
            this.notice = notice;
            dropped = transport.dropQueued(); // nothing of them is in the transport: unpin now
            opsInFlight -= dropped.size();
            unacked = new ArrayList<>(awaitingAck.values());
            awaitingAck.clear();
        }
        dropped.forEach(op -> op.source.unretain(op));
        if (reason.isRoutine()) {
            log.debug("request={} session={} aborting: {}", requestId(), sessionId(), reason);
        } else {
            log.info("request={} session={} aborting: {}", requestId(), sessionId(), reason);
        }
        TransferAbortedException ex = new TransferAbortedException(requestId(), reason);
        unacked.forEach(op -> op.acked.completeExceptionally(ex));
        completion.completeExceptionally(ex);
        maybeRelease();
        return true;
    }

    private void maybeRelease() {
        SessionState terminal;
        Notice n;
        AbortReason reason;
        long abortStart;
        synchronized (this) {
            if (releaseClaimed) {
                return;
            }
            if (state == SessionState.ABORTING && opsInFlight == 0) {
                transition(SessionState.ABORTED);
            }
            if (!(state == SessionState.ABORTED || state == SessionState.COMPLETED) || opsInFlight > 0) {
                return;
            }
            releaseClaimed = true;
            terminal = state;
            n = notice;
            reason = abortReason;
            abortStart = abortStartNanos;
        }
        if (terminal == SessionState.ABORTED) {
            // Sent only now: the receiver may take it as proof that no write of ours is still running.
            switch (n) {
                case ABORT -> connection.writeAbort(sessionId(), reason);
                case ABORT_ACK -> connection.writeAbortAck(sessionId());
                case NONE -> {
                }
            }
        }
        // Each step even if an earlier one threw (a bug elsewhere: logged, and it must not pin the rest).
        try {
            releaseStep("release the transport", transport::release);
            releaseStep("unbind", () -> connection.unbind(this));
            releaseStep("drop the registration", () -> host.released(this, terminal, abortStart));
            releaseStep("untrack", () -> LiveResources.untrack(trackingId));
        } finally {
            synchronized (this) {
                transition(SessionState.RELEASED);
            }
            log.debug("request={} session={} sender released after {}", requestId(), sessionId(), terminal);
            released.complete(terminal);
        }
    }

    private void releaseStep(String what, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            log.error("request={} session={} sender release: {} failed", requestId(), sessionId(), what, e);
        }
    }

    /**
     * Moves to {@code next} and tells the session listener. Called under the lock: a listener that throws is
     * logged and ignored, so it can never leave the session half way through a transition.
     */
    private void transition(SessionState next) {
        state = state.transitionTo(next);
        tellListener(next, bytesAcked);
    }

    private void tellListener(SessionState entered, long bytes) {
        try {
            host.sessionListener().onSession(requestId(), Side.SENDER, entered, bytes);
        } catch (RuntimeException e) {
            log.warn("request={} session={} session listener failed on {}", requestId(), sessionId(), entered, e);
        }
    }

    @Override
    public String toString() {
        return "DefaultSendSession[request=" + requestId() + ", session=" + sessionId() + ", agent=" + host.agentName()
                + ", to=" + descriptor.agentName() + ", " + backend() + ", state=" + state() + "]";
    }
}
