package dev.ripcord.kv;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The decode end of one request's KV transfer: a set of target pages in a region that one sender fills.
 *
 * <p>Contract.
 * <ul>
 *   <li>Hand {@link #descriptor()} to the sender (through the control plane); it attaches and pushes bytes.</li>
 *   <li>{@link #completion()} completes with the sender's metadata once every byte it sent has landed, or fails
 *   with {@link TransferAbortedException}.</li>
 *   <li>{@link #abort(String)} may be called at any time from any thread, any number of times.</li>
 *   <li>The target pages belong to the caller, but while the session is live a write may land in them. Reuse
 *   them for anything else only after {@link #released()} completes: by then the session is terminal and drained
 *   (no write of it can land any more) and its resources are given back, exactly once. A COMPLETED session is
 *   released right after completion; the pages then simply hold the request's KV.</li>
 * </ul>
 *
 * <p>Abort, drain, release. Abort first stops acceptance (state ABORTING: every later byte of the session is
 * dropped, and with shared memory the fence slot is closed so no sender copy can start), then drains (waits for
 * the copy landing right now, and with shared memory until the sender's copy left the fence bracket or its
 * process is gone), then releases. See docs/kv-transfer.md.
 */
public interface ReceiveSession {

    String requestId();

    long sessionId();

    /** What the sender needs; serialise with {@link ReceiveDescriptor#encode()} or Jackson. */
    ReceiveDescriptor descriptor();

    /** The region the target pages lie in. */
    KvRegion region();

    SessionState state();

    /** Bytes that landed so far (all of them once COMPLETED). */
    long bytesReceived();

    Optional<AbortReason> abortReason();

    /** Completes with the sender's metadata, or fails with {@link TransferAbortedException}. */
    CompletableFuture<byte[]> completion();

    /**
     * Completes, with the terminal state (COMPLETED or ABORTED), once the session is RELEASED: from then on no
     * write of this transfer session can land in its pages, so they may be freed or handed to another session.
     */
    CompletableFuture<SessionState> released();

    /**
     * Aborts the session and tells the sender. Idempotent: returns true only for the call that caused the abort;
     * false when the session was already aborting, aborted, completed or released.
     */
    boolean abort(String reason);

    /**
     * Aborts the session to carry out a request's cancel, and tells the peer why in the ABORT frame, typed: the
     * peer's futures fail with a {@link TransferAbortedException} whose reason's {@link AbortReason#cancellation()}
     * is this cancel. Otherwise as {@link #abort(String)}.
     */
    boolean abort(CancelReason reason, CancelSource source);
}
