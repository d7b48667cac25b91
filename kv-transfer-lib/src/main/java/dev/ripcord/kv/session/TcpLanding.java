package dev.ripcord.kv.session;

import dev.ripcord.kv.wire.FrameDecoder;
import dev.ripcord.kv.wire.LandingBuffer;
import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;

/**
 * TCP receive path of one DATA piece: lands its payload in the session's target pages, slice by slice, as the
 * connection's decoder reads it, either copied from a read buffer ({@link #accept}) or read by the socket straight
 * into the pages ({@link #landingBuffer}). Each landing is bracketed by the session ({@link
 * DefaultReceiveSession#enterLanding()} / {@link DefaultReceiveSession#leaveLanding(long)}): it opens only while the session is
 * TRANSFERRING, and the session's drain waits until every open one closed. That is the whole TCP fence: no byte
 * lands except through here. Runs on the connection's event loop.
 */
final class TcpLanding implements FrameDecoder.DataSink {
    private final DefaultReceiveSession session;
    private final ReceiveLink connection;
    private final MemorySegment region;
    private final TargetMap targets;
    private final long writeId;
    private final boolean last;
    private long next; // logical offset (in the concatenated targets) of the payload's next byte

    TcpLanding(DefaultReceiveSession session, ReceiveLink connection, MemorySegment region, TargetMap targets,
               long writeId, long dstOffset, boolean last) {
        this.session = session;
        this.connection = connection;
        this.region = region;
        this.targets = targets;
        this.writeId = writeId;
        this.next = dstOffset;
        this.last = last;
    }

    @Override
    public void accept(ByteBuf buffer, int index, int length) {
        long at = next;
        next += length;
        if (!session.enterLanding()) {
            return; // aborted: fenced, the bytes are dropped
        }
        try {
            copy(buffer, index, length, at);
        } finally {
            session.leaveLanding(length);
        }
    }

    @Override
    public LandingBuffer landingBuffer(int maxBytes) {
        if (!session.enterLanding()) {
            return null;
        }
        // The kernel may write into the region from now until the buffer's release, which closes the landing.
        long[] run = targets.contiguousRun(next);
        int n = (int) Math.min(maxBytes, run[1]);
        return new LandingBuffer(region.asSlice(run[0], n), () -> session.leaveLanding(0));
    }

    @Override
    public void landedInPlace(int length) {
        next += length;
        session.landedInPlace(length);
    }

    @Override
    public void finish() {
        if (last) {
            session.writeLanded(connection, writeId);
        }
    }

    private void copy(ByteBuf buffer, int index, int length, long logicalOffset) {
        if (buffer.nioBufferCount() == 1) {
            MemorySegment src = MemorySegment.ofBuffer(buffer.nioBuffer(index, length));
            targets.forEach(logicalOffset, length, (at, rel, n) -> MemorySegment.copy(src, rel, region, at, n));
        } else {
            targets.forEach(logicalOffset, length,
                    (at, rel, n) -> buffer.getBytes(index + (int) rel, region.asSlice(at, n).asByteBuffer()));
        }
    }
}
