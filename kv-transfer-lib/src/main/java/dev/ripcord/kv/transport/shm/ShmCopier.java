package dev.ripcord.kv.transport.shm;

import dev.ripcord.kv.Backend;
import dev.ripcord.kv.session.SendLink;
import dev.ripcord.kv.session.Transport;
import dev.ripcord.kv.session.WriteOp;
import dev.ripcord.kv.shm.FenceTable;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Shared-memory transport of one send session: the caller's thread copies each write into the receiver's mapping,
 * piece by piece (at most {@code pieceBytes}, the longest an abort waits for a copy), each piece inside the
 * session's fence bracket: the bracket opens only while the receiver has not fenced the session's epoch. Once a
 * write is copied (all its spans, for a batch) the receiver is told, once per write (SHM_WRITTEN), and COMPLETE is written by the session when no copy is in
 * flight any more. See docs/kv-transfer.md, "The fence word".
 */
public final class ShmCopier implements Transport {

    private final Transport.Callbacks session;
    private final SendLink connection;
    private final ShmMappings.Target target;
    private final int pieceBytes;
    private final long pid;
    /** The fence word has one WRITING bit: this transfer session's copies take turns, piece by piece. */
    private final ReentrantLock copyTurn = new ReentrantLock();
    private long bytesCopied; // guarded by the session's monitor: fully copied writes

    public ShmCopier(Transport.Callbacks session, SendLink connection, ShmMappings.Target target, int pieceBytes,
              long pid) {
        this.session = session;
        this.connection = connection;
        this.target = target;
        this.pieceBytes = pieceBytes;
        this.pid = pid;
    }

    @Override
    public Backend backend() {
        return Backend.SHM;
    }

    @Override
    public void accepted(WriteOp op) {
        // nothing queues: the copy starts right away, on the caller's thread
    }

    @Override
    public void start(WriteOp op) {
        Transport.CopyOutcome outcome;
        try {
            outcome = copy(op);
        } catch (RuntimeException e) {
            session.copyFailed(op, e);
            return;
        }
        if (outcome == Transport.CopyOutcome.DELIVERED) {
            // Before the op finishes: COMPLETE, written when the last op finished, must follow every SHM_WRITTEN.
            op.bytesOut();
            connection.writeShmWritten(session.sessionId(), op.writeId(), op.dstOffset(), op.length());
        }
        session.copied(op, outcome);
    }

    /** Copies {@code op} piece by piece, each inside the fence bracket, until done, stopped or fenced. */
    Transport.CopyOutcome copy(WriteOp op) {
        long done = 0;
        MemorySegment src = op.sourceSegment();
        while (done < op.length()) {
            if (session.writesStopped()) {
                return Transport.CopyOutcome.STOPPED;
            }
            long n = Math.min(pieceBytes, op.length() - done);
            copyTurn.lock();
            try {
                FenceTable.Begin begin;
                while ((begin = target.fences().tryBeginWrite(target.slot(), target.epoch(), pid))
                        == FenceTable.Begin.BUSY && !session.writesStopped()) {
                    LockSupport.parkNanos(10_000); // another process writes this transfer session: a control-plane bug
                }
                if (begin != FenceTable.Begin.WRITING) {
                    return begin == FenceTable.Begin.FENCED ? Transport.CopyOutcome.FENCED : Transport.CopyOutcome.STOPPED;
                }
                try {
                    long base = done;
                    // gather (the write's source spans) x scatter (the receiver's target pages)
                    op.forEachSource(base, n, (srcAt, rel, len) ->
                            target.targets().forEach(op.dstOffset() + base + rel, len, (at, rel2, len2) ->
                                    MemorySegment.copy(src, srcAt + rel2, target.data(), at, len2)));
                } finally {
                    target.fences().endWrite(target.slot());
                }
            } finally {
                copyTurn.unlock();
            }
            done += n;
        }
        return Transport.CopyOutcome.DELIVERED;
    }

    @Override
    public boolean queueComplete() {
        return false;
    }

    @Override
    public void wake() {
    }

    @Override
    public void finished(WriteOp op, boolean delivered) {
        if (delivered) {
            bytesCopied += op.length();
        }
    }

    @Override
    public long bytesSent() {
        return bytesCopied;
    }

    @Override
    public List<WriteOp> dropQueued() {
        return List.of(); // a write is copying (it finishes by itself at the next piece) or done
    }

    @Override
    public void release() {
        target.release();
    }
}
