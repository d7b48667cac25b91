package dev.ripcord.kv.transport.tcp;

import dev.ripcord.kv.Backend;
import dev.ripcord.kv.session.Transport;
import dev.ripcord.kv.session.WriteOp;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * TCP transport of one send session: its writes, then its COMPLETE, queue here until the connection's pump (round
 * robin over the sessions that have something to write, while the channel is writable) takes them piece by piece.
 * A piece's payload is the source segment itself, so a write reads source memory until the kernel took its last
 * piece ({@link Transport.Callbacks#pieceWritten}). Queue state is guarded by the session's monitor.
 */
public final class TcpPump implements Transport {

    /** The next thing the pump writes for this transfer session: a piece of a write, or COMPLETE. */
    record Piece(WriteOp op, long offset, long length, boolean last, long completeTotal,
                 byte[] metadata) {
        boolean isComplete() {
            return op == null;
        }
    }

    private static final WriteOp COMPLETE_MARKER = WriteOp.marker();

    private final Transport.Callbacks session;
    private final SenderConnection connection;
    // guarded by the session's monitor
    private final ArrayDeque<WriteOp> queue = new ArrayDeque<>(); // writes (and COMPLETE) not fully issued
    private long bytesAccepted;
    private long bytesIssued; // handed to the transport

    /** Event-loop confined: owned by the connection's pump. */
    boolean inReadyQueue;

    public TcpPump(Transport.Callbacks session, SenderConnection connection) {
        this.session = session;
        this.connection = connection;
    }

    Transport.Callbacks session() {
        return session;
    }

    @Override
    public Backend backend() {
        return Backend.TCP;
    }

    @Override
    public void accepted(WriteOp op) {
        queue.add(op);
        bytesAccepted += op.length();
    }

    @Override
    public void start(WriteOp op) {
        connection.schedulePump(this);
    }

    @Override
    public boolean queueComplete() {
        queue.add(COMPLETE_MARKER);
        return true;
    }

    @Override
    public void wake() {
        connection.schedulePump(this);
    }

    @Override
    public void finished(WriteOp op, boolean delivered) {
        // counted when accepted: COMPLETE follows every accepted write on the wire
    }

    @Override
    public long bytesSent() {
        return bytesAccepted;
    }

    @Override
    public List<WriteOp> dropQueued() {
        List<WriteOp> dropped = new ArrayList<>();
        for (WriteOp op : queue) {
            if (op == COMPLETE_MARKER) {
                continue;
            }
            if (op.closeIssuing()) {
                dropped.add(op); // nothing of it is in the transport: unpin now
            }
        }
        queue.clear();
        return dropped;
    }

    @Override
    public void release() {
    }

    /** Event loop: the next piece to write, or null when nothing is ready (or the session stopped writing). */
    Piece nextPiece(int maxPiece) {
        synchronized (session) {
            WriteOp op = queue.peek();
            if (op == null || session.writesStopped()) {
                return null;
            }
            if (op == COMPLETE_MARKER) {
                queue.poll();
                return new Piece(null, 0, 0, true, bytesAccepted, session.completeLeaving());
            }
            long offset = op.issuedBytes();
            long n = Math.min(maxPiece, op.contiguousFrom(offset)); // a piece never crosses a source span
            bytesIssued += n;
            boolean last = op.issue(n);
            if (last) {
                queue.poll();
            }
            return new Piece(op, offset, n, last, 0, null);
        }
    }

    /** True while there is something the pump should come back for. */
    boolean hasPendingPieces() {
        synchronized (session) {
            return !session.writesStopped() && !queue.isEmpty();
        }
    }

    /** A piece's bytes left the source segment (written to the socket), or the write failed. */
    void pieceWritten(WriteOp op) {
        session.pieceWritten(op);
    }

    /** Bytes handed to the transport so far (for tests of source pinning). */
    @Override
    public long bytesIssued() {
        synchronized (session) {
            return bytesIssued;
        }
    }

    /** True while the connection's outbound buffer is over its high-water mark (tests of source pinning). */
    @Override
    public boolean backedUp() {
        return !connection.isWritable();
    }
}
