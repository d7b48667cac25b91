package dev.ripcord.kv.wire;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An empty read buffer whose memory is a slice of a destination region: the socket read lands payload bytes
 * where they belong, with no copy in user space. It never frees that memory; when Netty releases it (after the
 * decoder consumed it, or straight away when a read returned nothing) {@code onRelease} runs exactly once, which
 * is how the session knows the kernel is no longer writing into its pages. Internal.
 */
public final class LandingBuffer extends UnpooledDirectByteBuf {
    private final Runnable onRelease;
    private final AtomicBoolean released = new AtomicBoolean();

    public LandingBuffer(MemorySegment destination, Runnable onRelease) {
        super(UnpooledByteBufAllocator.DEFAULT, destination.asByteBuffer(), (int) destination.byteSize());
        this.onRelease = onRelease;
        clear(); // wrapped buffers start full; this one is to be filled
    }

    @Override
    protected void deallocate() {
        // The wrapping constructor marks the buffer as not owning its memory, so super does not free it.
        super.deallocate();
        if (released.compareAndSet(false, true)) {
            onRelease.run();
        }
    }
}
