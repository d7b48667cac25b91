package dev.ripcord.kv.session;

import dev.ripcord.kv.ByteRange;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One write of a send session ({@code send} or {@code sendBatch}): source spans, in order, that land contiguously
 * at {@code dstOffset} of the receiver's targets, and that the transport reads, maybe in several pieces. The
 * receiver acknowledges a write as a whole, once every byte of it landed.
 *
 * <p>The piece bookkeeping ({@link #issue}, {@link #closeIssuing}, the session's count of written pieces) is
 * guarded by the owning session's monitor: the session and its transport call it with that monitor held.
 */
public final class WriteOp {
    final long writeId;
    final DefaultKvRegion source;
    /** Source offset of each span, and the write offset at which each span starts (prefix sums). */
    private final long[] spanSource;
    private final long[] spanStart;
    final long length;
    final long dstOffset;
    final CompletableFuture<Void> acked = new CompletableFuture<>();
    /** When the session accepted the write, and when its bytes left the source (0 until then): for the meters. */
    final long postedNanos = System.nanoTime();
    private volatile long outNanos;
    // guarded by the session
    private long issuedBytes;
    private int issuedPieces;
    int completedPieces;
    boolean closed; // no more pieces will be issued

    WriteOp(long writeId, DefaultKvRegion source, List<ByteRange> spans, long dstOffset) {
        this.writeId = writeId;
        this.source = source;
        this.spanSource = new long[spans.size()];
        this.spanStart = new long[spans.size()];
        long at = 0;
        for (int i = 0; i < spans.size(); i++) {
            spanSource[i] = spans.get(i).offset();
            spanStart[i] = at;
            at += spans.get(i).length();
        }
        this.length = at;
        this.dstOffset = dstOffset;
    }

    /** A marker op with no bytes (the TCP pump's place for COMPLETE in its queue). */
    public static WriteOp marker() {
        return new WriteOp(-1, null, List.of(), 0);
    }

    public long writeId() {
        return writeId;
    }

    /** Bytes of the write. */
    public long length() {
        return length;
    }

    /** Offset in the receiver's targets where the write's first byte lands. */
    public long dstOffset() {
        return dstOffset;
    }

    /** The memory of the source region the spans' offsets address. */
    public MemorySegment sourceSegment() {
        return source.segment();
    }

    /** Number of source spans (1 for {@code send}). */
    public int spans() {
        return spanSource.length;
    }

    /**
     * The write's bytes left the source: the shared-memory copy ended (before its SHM_WRITTEN is written), or the
     * kernel took the last TCP piece. The first call counts.
     */
    public void bytesOut() {
        if (outNanos == 0) {
            outNanos = System.nanoTime();
        }
    }

    /** When the bytes left the source, or 0 when that was not seen (the write failed, or its ack came first). */
    long outNanos() {
        return outNanos;
    }

    /** Session monitor held: bytes handed to the transport so far. */
    public long issuedBytes() {
        return issuedBytes;
    }

    /**
     * Session monitor held: the transport took the next {@code n} bytes as one piece. Returns true when that was
     * the write's last piece (no more pieces will be issued).
     */
    public boolean issue(long n) {
        issuedBytes += n;
        issuedPieces++;
        if (issuedBytes == length) {
            closed = true;
            return true;
        }
        return false;
    }

    /**
     * Session monitor held: no more pieces of this write will be issued (the session aborts). Returns true when
     * no piece of it is in the transport, so it can be unpinned now.
     */
    public boolean closeIssuing() {
        closed = true;
        return completedPieces == issuedPieces;
    }

    /** Session monitor held: a piece left the source; true when it was the write's last issued one. */
    boolean pieceDone() {
        completedPieces++;
        return closed && completedPieces == issuedPieces;
    }

    private int spanAt(long at) {
        int i = Arrays.binarySearch(spanStart, at);
        return i >= 0 ? i : -i - 2;
    }

    private long spanEnd(int i) {
        return i + 1 < spanStart.length ? spanStart[i + 1] : length;
    }

    /** Source offset of the write's byte {@code at}. */
    public long sourceOffsetAt(long at) {
        int i = spanAt(at);
        return spanSource[i] + at - spanStart[i];
    }

    /** Bytes from the write's byte {@code at} to the end of the source span holding it. */
    public long contiguousFrom(long at) {
        return spanEnd(spanAt(at)) - at;
    }

    /** Calls {@code part} for each source-contiguous part of the write's bytes {@code [from, from + n)}. */
    public void forEachSource(long from, long n, TargetMap.Part part) {
        long done = 0;
        while (done < n) {
            long at = from + done;
            long len = Math.min(n - done, contiguousFrom(at));
            part.accept(sourceOffsetAt(at), done, len);
            done += len;
        }
    }
}
