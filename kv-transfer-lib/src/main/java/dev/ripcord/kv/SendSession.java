package dev.ripcord.kv;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The prefill end of one request's KV transfer: pushes byte ranges of a local region into the receiver's target
 * pages, then completes with small metadata (e.g. the first token), or aborts.
 *
 * <p>Contract.
 * <ul>
 *   <li>{@link #send} may be called as soon as a chunk's pages are computed, from any thread, any number of
 *   times; destination offsets address the concatenation of the receiver's targets. Its future completes when the
 *   receiver acknowledges that the bytes landed.</li>
 *   <li>Source memory is pinned while a write may read it: the source region cannot be released, and the session
 *   cannot be RELEASED, until every such write has finished or been dropped. With TCP the bytes go from the source
 *   segment to the socket without a copy, so a write reads the source until the kernel has taken it; with shared
 *   memory the copy into the receiver's mapping runs on the calling thread, piece by piece, each piece inside
 *   the session's fence bracket, so {@code send} returns once the bytes are in the receiver's memory.</li>
 *   <li>{@link #complete(byte[])} ends the session; the receiver's verdict decides the outcome (COMPLETED or
 *   ABORTED).</li>
 *   <li>{@link #abort(String)} may be called at any time from any thread, any number of times; after
 *   {@code complete()} has handed COMPLETE to the transport it is too late and returns false: the verdict
 *   follows.</li>
 *   <li>{@link #released()} completes once the session is RELEASED: no write of it reads source memory any more.
 *   If the connection dies after COMPLETE was sent, the sender reports ABORTED (PEER_LOST) even though the
 *   receiver may have completed; the receiver's outcome is the authoritative one.</li>
 * </ul>
 */
public interface SendSession {

    String requestId();

    /** The receiver's session id. */
    long sessionId();

    ReceiveDescriptor descriptor();

    /** TCP or SHM: the backend chosen for this transfer session. */
    Backend backend();

    SessionState state();

    long bytesAcknowledged();

    Optional<AbortReason> abortReason();

    /** Completes when the receiver confirms COMPLETED; fails with {@link TransferAbortedException}. */
    CompletableFuture<Void> completion();

    /** Completes with the terminal state once RELEASED: no write of the session reads source memory any more. */
    CompletableFuture<SessionState> released();

    /**
     * Pushes {@code [srcOffset, srcOffset + length)} of {@code source} to {@code [dstOffset, dstOffset + length)}
     * of the receiver's targets. Returns a future that completes when the receiver acknowledges the bytes landed,
     * or fails with {@link TransferAbortedException} (the session aborted, or the receiver fenced it first).
     *
     * @throws IllegalArgumentException spans out of bounds, or a region of another agent
     * @throws IllegalStateException    after {@code complete()}, or the source region is closed
     */
    CompletableFuture<Void> send(KvRegion source, long srcOffset, long length, long dstOffset);

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
    CompletableFuture<Void> sendBatch(KvRegion source, List<ByteRange> sourceSpans, long dstOffset);

    /**
     * Like {@link #send(KvRegion, long, long, long)} for a slice of a registered region, e.g.
     * {@code pool.asSlice(page * pageBytes, pages * pageBytes)}.
     */
    CompletableFuture<Void> send(MemorySegment sourceSlice, long dstOffset);

    /**
     * No more writes: once every write has been handed over, the receiver checks it has all bytes and answers.
     * Returns {@link #completion()}.
     */
    CompletableFuture<Void> complete(byte[] metadata);

    /**
     * Aborts the session and tells the receiver once this side's writes have drained. Idempotent: true only for
     * the call that caused the abort.
     */
    boolean abort(String reason);

    /**
     * Aborts the session to carry out a request's cancel, and tells the peer why in the ABORT frame, typed: the
     * peer's futures fail with a {@link TransferAbortedException} whose reason's {@link AbortReason#cancellation()}
     * is this cancel. Otherwise as {@link #abort(String)}.
     */
    boolean abort(CancelReason reason, CancelSource source);
}
