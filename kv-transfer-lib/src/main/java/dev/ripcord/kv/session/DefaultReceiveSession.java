package dev.ripcord.kv.session;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.ReceiveListener;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.TransferAbortedException;
import dev.ripcord.kv.shm.PeerProcess;
import dev.ripcord.kv.wire.FrameDecoder;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link ReceiveSession} implementation: the decode end of one request's KV transfer (the contract is on the
 * interface).
 *
 * <p>Abort, drain, release. Abort first stops acceptance (state ABORTING: every later byte of the session is
 * dropped, and with shared memory the fence slot is closed so no sender copy can start), then drains (waits for
 * the copy landing right now, and with shared memory until the sender's copy left the fence bracket or its
 * process is gone), then releases. See docs/kv-transfer.md.
 *
 * <p>Design note. The backend shows in two places only: the session's {@link SessionFence} (a fence-table slot
 * when the session is offered shared memory, nothing for TCP only), and {@link TcpLanding}, which lands a DATA
 * piece's payload inside a bracket the session opens only while it accepts bytes. Everything it needs from its
 * agent goes through a {@link SessionHost}.
 */
public final class DefaultReceiveSession implements ReceiveSession {
    private static final Logger log = LoggerFactory.getLogger(DefaultReceiveSession.class);

    private final SessionHost host;
    private final ReceiveDescriptor descriptor;
    private final DefaultKvRegion region;
    private final TargetMap targets;
    private final ReceiveListener listener;
    private final SessionFence fence;
    private final CompletableFuture<byte[]> completion = new CompletableFuture<>();
    private final CompletableFuture<SessionState> released = new CompletableFuture<>();
    private final long trackingId;
    private final DrainWatchdog.Drain drain = new DrainWatchdog.Drain() {
        @Override
        public void recheck() {
            maybeRelease();
        }

        @Override
        public boolean isReleaseClaimed() {
            return DefaultReceiveSession.this.isReleaseClaimed();
        }

        @Override
        public String requestId() {
            return DefaultReceiveSession.this.requestId();
        }

        @Override
        public long sessionId() {
            return DefaultReceiveSession.this.sessionId();
        }
    };

    // guarded by this
    private SessionState state = SessionState.OPEN;
    private ReceiveLink connection;
    private boolean sharedMemoryAttached;
    private PeerProcess sender; // the attached sender's process, as its HELLO named it: pid and start time
    private int landingsInProgress;
    private long bytesLanded;
    private AbortReason abortReason;
    private long abortStartNanos;
    private boolean releaseClaimed;
    private boolean fenced; // set in the same locked block that leaves OPEN/TRANSFERRING: no release before it
    private boolean settling; // the thread that reached the verdict still tells the caller: release waits for it
    private boolean watched;
    private ScheduledFuture<?> attachTimer;
    private long writeStart = -1; // TCP: destination offset of the write whose pieces are arriving
    private long writeBytes;
    private volatile Interleaving interleaving = Interleaving.NONE;

    /**
     * Test seam: the points between a verdict's locked block and its telling the caller, where another thread's
     * step (a watchdog recheck, an ABORT_ACK, a lost connection) may run. Production code never sets one.
     */
    public interface Interleaving {
        Interleaving NONE = (step, session) -> { };

        /** Where the session stands when the seam is called. */
        enum Step {
            /** abort: ABORTING and fenced, the lock released; completion, peer and listener not told yet. */
            ACCEPTANCE_STOPPED,
            /** COMPLETE: COMPLETED and fenced, the lock released; completion and listener not told yet. */
            VERDICT_REACHED
        }

        void at(Step step, DefaultReceiveSession session);
    }

    public DefaultReceiveSession(SessionHost host, ReceiveDescriptor descriptor, DefaultKvRegion region, TargetMap targets,
                   ReceiveListener listener, SessionFence fence) {
        this.host = host;
        this.descriptor = descriptor;
        this.region = region;
        this.targets = targets;
        this.listener = listener;
        this.fence = fence;
        this.trackingId = LiveResources.track(LiveResources.Kind.SESSION, this::toString);
        tellListener(SessionState.OPEN, 0);
    }

    @Override
    public String requestId() {
        return descriptor.requestId();
    }

    @Override
    public long sessionId() {
        return descriptor.sessionId();
    }

    /** What the sender needs; serialise with {@link ReceiveDescriptor#encode()} or Jackson. */
    @Override
    public ReceiveDescriptor descriptor() {
        return descriptor;
    }

    @Override
    public DefaultKvRegion region() {
        return region;
    }

    @Override
    public synchronized SessionState state() {
        return state;
    }

    /** Bytes that landed so far (all of them once COMPLETED). */
    @Override
    public synchronized long bytesReceived() {
        return bytesLanded;
    }

    @Override
    public synchronized Optional<AbortReason> abortReason() {
        return Optional.ofNullable(abortReason);
    }

    /** Completes with the sender's metadata, or fails with {@link TransferAbortedException}. */
    @Override
    public CompletableFuture<byte[]> completion() {
        return completion;
    }

    /**
     * Completes, with the terminal state (COMPLETED or ABORTED), once the session is RELEASED: from then on no
     * write of this transfer session can land in its pages, so they may be freed or handed to another session.
     */
    @Override
    public CompletableFuture<SessionState> released() {
        return released;
    }

    /** The session's targets: also its hold on the region ({@link DefaultKvRegion#retain}). */
    public TargetMap targets() {
        return targets;
    }

    public void interleave(Interleaving seam) {
        interleaving = seam;
    }

    /**
     * Aborts the session and tells the sender. Idempotent: returns true only for the call that caused the abort;
     * false when the session was already aborting, aborted, completed or released.
     */
    @Override
    public boolean abort(String reason) {
        return abort(new AbortReason(AbortReason.Cause.REQUESTED, Side.RECEIVER, reason), true);
    }

    /**
     * Aborts the session to carry out a request's cancel, and tells the peer why in the ABORT frame, typed: the
     * peer's futures fail with a {@link TransferAbortedException} whose reason's {@link AbortReason#cancellation()}
     * is this cancel. Otherwise as {@link #abort(String)}.
     */
    @Override
    public boolean abort(dev.ripcord.protocol.CancelReason reason, dev.ripcord.protocol.CancelSource source) {
        return abort(new AbortReason(AbortReason.Cause.REQUESTED, Side.RECEIVER, "cancelled",
                new AbortReason.Cancel(reason, source)), true);
    }

    // ---- transport side ----------------------------------------------------------------------

    public void armAttachTimer(ScheduledFuture<?> timer) {
        boolean cancel;
        synchronized (this) {
            cancel = state != SessionState.OPEN;
            if (!cancel) {
                attachTimer = timer;
            }
        }
        if (cancel) {
            timer.cancel(false);
        }
    }

    /** ATTACH from a sender; returns null on success, else why the sender must abort. */
    public AbortReason attach(ReceiveLink c, boolean sharedMemory) {
        ScheduledFuture<?> timer;
        synchronized (this) {
            if (state != SessionState.OPEN) {
                return abortReason != null ? abortReason
                        : new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER, "session is " + state);
            }
            if (sharedMemory && !fence.offersSharedMemory()) {
                return new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER,
                        "shared memory was not offered for this transfer");
            }
            connection = c;
            sharedMemoryAttached = sharedMemory;
            sender = c.peerProcess();
            transition(SessionState.TRANSFERRING);
            c.bind(this);
            timer = attachTimer;
            attachTimer = null;
        }
        if (timer != null) {
            timer.cancel(false);
        }
        log.debug("request={} session={} sender {} attached over {}", requestId(), sessionId(), c.peerName(),
                sharedMemory ? "shm" : "tcp");
        return null;
    }

    /** A DATA header for this transfer session; returns where its payload lands, or null to drop it. */
    public FrameDecoder.DataSink landing(ReceiveLink c, long writeId, long dstOffset, int length, boolean last) {
        AbortReason violation = null;
        synchronized (this) {
            if (state != SessionState.TRANSFERRING || connection != c) {
                return null;
            }
            if (sharedMemoryAttached || !targets.contains(dstOffset, length)) {
                violation = new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER,
                        "DATA [" + dstOffset + ", +" + length + ") outside the session's " + targets.totalBytes()
                                + " bytes or on a shared-memory session");
            } else if (writeStart < 0) {
                writeStart = dstOffset;
                writeBytes = 0;
            }
        }
        if (violation != null) {
            abort(violation, true);
            return null;
        }
        return new TcpLanding(this, c, region.segment(), targets, writeId, dstOffset, last);
    }

    /** TCP: opens a landing if the session accepts bytes (TRANSFERRING); close it with {@link #leaveLanding}. */
    synchronized boolean enterLanding() {
        if (state != SessionState.TRANSFERRING) {
            return false;
        }
        landingsInProgress++;
        return true;
    }

    /**
     * TCP: closes a landing, of which {@code copied} bytes landed (0 for a socket read straight into the pages:
     * those count through {@link #landedInPlace}). An aborting session may be drained now.
     */
    void leaveLanding(long copied) {
        boolean aborting;
        synchronized (this) {
            landingsInProgress--;
            bytesLanded += copied;
            writeBytes += copied;
            aborting = state == SessionState.ABORTING;
        }
        if (copied > 0) {
            host.metrics().bytes(false, false, copied);
        }
        if (aborting) {
            maybeRelease();
        }
    }

    /** TCP: the socket read {@code length} bytes straight into the pages; they count only while TRANSFERRING. */
    void landedInPlace(long length) {
        synchronized (this) {
            if (state != SessionState.TRANSFERRING) {
                return; // in the region, but the session is aborting: they count for nothing
            }
            bytesLanded += length;
            writeBytes += length;
        }
        host.metrics().bytes(false, false, length);
    }

    /** TCP: the last piece of write {@code writeId} landed: acknowledge the whole write. */
    void writeLanded(ReceiveLink c, long writeId) {
        long start;
        long bytes;
        synchronized (this) {
            if (state != SessionState.TRANSFERRING) {
                return;
            }
            start = writeStart;
            bytes = writeBytes;
            writeStart = -1;
        }
        landed(c, writeId, start, bytes);
    }

    /** SHM_WRITTEN: the sender copied a write into the shared mapping. */
    public void onSharedMemoryWritten(ReceiveLink c, long writeId, long dstOffset, long length) {
        AbortReason violation = null;
        synchronized (this) {
            if (state != SessionState.TRANSFERRING || connection != c) {
                return;
            }
            if (!sharedMemoryAttached || !targets.contains(dstOffset, length)) {
                violation = new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER,
                        "SHM_WRITTEN [" + dstOffset + ", +" + length + ") invalid");
            } else {
                bytesLanded += length;
            }
        }
        if (violation != null) {
            abort(violation, true);
            return;
        }
        host.metrics().bytes(false, true, length);
        landed(c, writeId, dstOffset, length);
    }

    private void landed(ReceiveLink c, long writeId, long dstOffset, long length) {
        c.writeAck(sessionId(), writeId, length);
        try {
            listener.onChunkLanded(this, dstOffset, length);
        } catch (RuntimeException e) {
            log.warn("request={} session={} onChunkLanded listener failed", requestId(), sessionId(), e);
        }
    }

    /** COMPLETE: the sender is done; verify the byte count and reach the verdict. */
    public void onComplete(ReceiveLink c, long totalBytes, byte[] metadata) {
        AbortReason violation = null;
        synchronized (this) {
            if (state != SessionState.TRANSFERRING || connection != c) {
                return; // already aborting: the sender has or will have our ABORT
            }
            if (totalBytes != bytesLanded) {
                violation = new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER,
                        "sender sent " + totalBytes + " bytes but " + bytesLanded + " landed");
            } else {
                transition(SessionState.COMPLETED);
                closeFenceLocked();
                settling = true;
            }
        }
        if (violation != null) {
            abort(violation, true);
            return;
        }
        try {
            interleaving.at(Interleaving.Step.VERDICT_REACHED, this);
            completion.complete(metadata);
            c.writeCompleted(sessionId());
            log.debug("request={} session={} completed, {} bytes", requestId(), sessionId(), totalBytes);
            try {
                listener.onCompleted(this, metadata);
            } catch (RuntimeException e) {
                log.warn("request={} session={} onCompleted listener failed", requestId(), sessionId(), e);
            }
        } finally {
            settled();
        }
    }

    /** ABORT from the sender: it has drained its writes, so this doubles as the acknowledgement. */
    public void onRemoteAbort(ReceiveLink c, AbortReason reason) {
        synchronized (this) {
            if (connection != c) {
                return;
            }
        }
        abort(reason, false);
        maybeRelease();
    }

    /** The connection this transfer session is bound to died or its lease expired. */
    public void onConnectionLost(ReceiveLink c, AbortReason reason) {
        synchronized (this) {
            if (connection != c) {
                return;
            }
        }
        abort(reason, false);
        maybeRelease();
    }

    /**
     * Stops acceptance and closes the fence (in one locked block: no release can be claimed before the fence is
     * closed), fails the completion, tells the sender (if asked and attached), then drains. Only after this thread
     * has told everyone can the session release, whoever drives the release.
     */
    public boolean abort(AbortReason reason, boolean notifyPeer) {
        ReceiveLink c;
        ScheduledFuture<?> timer;
        synchronized (this) {
            if (state != SessionState.OPEN && state != SessionState.TRANSFERRING) {
                return false;
            }
            abortReason = reason;
            abortStartNanos = System.nanoTime();
            transition(SessionState.ABORTING);
            closeFenceLocked();
            settling = true;
            c = connection;
            timer = attachTimer;
            attachTimer = null;
        }
        try {
            interleaving.at(Interleaving.Step.ACCEPTANCE_STOPPED, this);
            completion.completeExceptionally(new TransferAbortedException(requestId(), reason));
            if (timer != null) {
                timer.cancel(false);
            }
            if (notifyPeer && c != null) {
                c.writeAbort(sessionId(), reason);
            }
            if (reason.isRoutine()) {
                log.debug("request={} session={} aborting: {}", requestId(), sessionId(), reason);
            } else {
                log.info("request={} session={} aborting: {}", requestId(), sessionId(), reason);
            }
            try {
                listener.onAborted(this, reason);
            } catch (RuntimeException e) {
                log.warn("request={} session={} onAborted listener failed", requestId(), sessionId(), e);
            }
        } finally {
            settled();
        }
        return true;
    }

    /**
     * Sets FENCED, in the locked block that leaves OPEN or TRANSFERRING. A fence word that moved to another epoch
     * (only a slot freed twice can do that) admits no write of this session's epoch either: it counts as closed.
     */
    private void closeFenceLocked() {
        try {
            fence.close();
        } catch (RuntimeException e) {
            log.error("request={} session={} fence slot no longer at the session's epoch", requestId(),
                    sessionId(), e);
        }
        fenced = true;
    }

    /** The verdict's thread has told the caller: the session may release now, here or by whoever drains it. */
    private void settled() {
        synchronized (this) {
            settling = false;
        }
        maybeRelease();
    }

    /** Releases once terminal and drained; otherwise asks the agent's watchdog to look again later. */
    public void maybeRelease() {
        SessionState terminal = null;
        boolean watch = false;
        synchronized (this) {
            if (releaseClaimed || settling || !fenced) {
                return; // not terminal yet, or the verdict's thread calls again once it has told the caller
            }
            boolean drained = landingsInProgress == 0 && fence.drained(sender);
            if (state == SessionState.ABORTING && drained) {
                transition(SessionState.ABORTED);
            }
            if ((state == SessionState.ABORTED || state == SessionState.COMPLETED) && drained) {
                releaseClaimed = true;
                terminal = state;
            } else if ((state == SessionState.ABORTING || state == SessionState.COMPLETED)
                    && landingsInProgress == 0 && !watched) {
                watched = true; // only a shared-memory writer can keep us here; poll for it
                watch = true;
            }
        }
        if (terminal != null) {
            release(terminal);
        } else if (watch) {
            log.debug("request={} session={} waiting for shared-memory writer pid {} to leave the fence",
                    requestId(), sessionId(), fence.writer());
            host.watchDrain(drain);
        }
    }

    public synchronized boolean isReleaseClaimed() {
        return releaseClaimed;
    }

    /** Agent close, after transports stopped: nothing of ours can land any more (see DefaultTransferAgent#close). */
    public void forceRelease() {
        SessionState terminal;
        synchronized (this) {
            if (releaseClaimed) {
                return;
            }
            if (state == SessionState.OPEN || state == SessionState.TRANSFERRING) {
                if (abortReason == null) {
                    abortReason = new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.RECEIVER, "agent closed");
                }
                transition(SessionState.ABORTING);
                closeFenceLocked();
            }
            if (state == SessionState.ABORTING) {
                transition(SessionState.ABORTED);
            }
            releaseClaimed = true;
            terminal = state;
        }
        log.warn("request={} session={} released by agent close before its sender drained", requestId(),
                sessionId());
        release(terminal);
    }

    /**
     * Gives everything back, each step even if an earlier one threw (a step that throws is a bug elsewhere; it is
     * logged and must not pin the rest), then completes {@link #released()}.
     */
    private void release(SessionState terminal) {
        ReceiveLink c;
        long abortStart;
        AbortReason reason;
        synchronized (this) {
            c = connection;
            abortStart = abortStartNanos;
            reason = abortReason;
        }
        if (terminal == SessionState.ABORTED) { // forceRelease may get here without abort() having told anyone
            completion.completeExceptionally(new TransferAbortedException(requestId(), reason != null ? reason
                    : new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.RECEIVER, "agent closed")));
        }
        try {
            releaseStep("unbind", () -> {
                if (c != null) {
                    c.unbind(this);
                }
            });
            releaseStep("free the fence slot", fence::free);
            releaseStep("drop the registration", () -> host.released(this, terminal, abortStart));
            releaseStep("untrack", () -> LiveResources.untrack(trackingId));
            // a closing region is released by this, just before the session
            releaseStep("let go of the region", () -> region.unretain(targets));
        } finally {
            synchronized (this) {
                transition(SessionState.RELEASED);
            }
            log.debug("request={} session={} released after {}", requestId(), sessionId(), terminal);
            released.complete(terminal);
        }
    }

    private void releaseStep(String what, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            log.error("request={} session={} release: {} failed", requestId(), sessionId(), what, e);
        }
    }

    /**
     * Moves to {@code next} and tells the session listener. Called under the lock: a listener that throws is
     * logged and ignored, so it can never leave the session half way through a transition (unfenced, unwatched).
     */
    private void transition(SessionState next) {
        state = state.transitionTo(next);
        tellListener(next, bytesLanded);
    }

    private void tellListener(SessionState entered, long bytes) {
        try {
            host.sessionListener().onSession(requestId(), Side.RECEIVER, entered, bytes);
        } catch (RuntimeException e) {
            log.warn("request={} session={} session listener failed on {}", requestId(), sessionId(), entered, e);
        }
    }

    @Override
    public String toString() {
        return "DefaultReceiveSession[request=" + requestId() + ", session=" + sessionId() + ", agent=" + host.agentName()
                + ", state=" + state() + ", " + descriptor.totalBytes() + " bytes]";
    }
}
