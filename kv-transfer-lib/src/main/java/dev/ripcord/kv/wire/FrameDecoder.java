package dev.ripcord.kv.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * Splits the inbound byte stream into frames without buffering payloads.
 *
 * <p>Design note: a DATA payload may be hundreds of MiB. A cumulating decoder (Netty's length-field decoder) would
 * copy it into a cumulation buffer before anyone could copy it to its destination: two copies. Here only the small
 * fixed-size headers and control frames are accumulated (when a read splits them); payload bytes are handed to a
 * {@link DataSink} as they arrive, still inside Netty's read buffer, so the sink's copy into the destination segment
 * is the only user-space copy on the receive path.
 *
 * <p>Subclasses are the connection handlers; they see control frames whole and DATA frames as a header plus a
 * stream of payload slices. Everything runs on the channel's event loop. Internal.
 */
public abstract class FrameDecoder extends ChannelInboundHandlerAdapter {

    /** Receives one DATA payload in order, in slices that are valid only during the call. */
    public interface DataSink {
        void accept(ByteBuf buffer, int index, int length);

        /**
         * A buffer over the destination of the next at most {@code maxBytes} payload bytes, for the socket to read
         * into directly; or null (the session stopped accepting, or this sink cannot). The sink considers a write
         * in progress until the buffer is released.
         */
        default LandingBuffer landingBuffer(int maxBytes) {
            return null;
        }

        /** {@code length} payload bytes arrived in the buffer from {@link #landingBuffer}: already in place. */
        default void landedInPlace(int length) {
            throw new UnsupportedOperationException();
        }

        /** All payload bytes were delivered. Not called when the connection dies mid-payload. */
        void finish();
    }

    private ByteBuf partial;
    private int frameLength = -1; // bytes after the length field; -1 while reading the prefix
    private FrameType type;
    private int payloadRemaining;
    private DataSink sink;
    private LandingBuffer landing; // handed to the socket for the read now in progress

    /**
     * Wraps the channel's read-buffer allocator so that DATA payloads are read by the kernel straight into their
     * destination. Reads are sized to the frame structure: outside a payload a read asks for exactly the bytes up
     * to the end of the next header (so it stops where a payload starts), inside one the buffer is the
     * destination slice itself ({@link DataSink#landingBuffer}). So no payload byte ever shares a read with a
     * header, and none is copied in user space; it costs one small read per DATA header. When the sink refuses
     * (session aborting) the payload is read into an ordinary buffer and dropped. Install per channel.
     */
    @SuppressWarnings("deprecation") // Netty's own DelegatingHandle implements the deprecated Handle
    public RecvByteBufAllocator directLanding(RecvByteBufAllocator base) {
        return () -> new RecvByteBufAllocator.DelegatingHandle(base.newHandle()) {
            @Override
            public ByteBuf allocate(ByteBufAllocator alloc) {
                int size = nextReadSize();
                if (size == LAND) {
                    landing = sink.landingBuffer(payloadRemaining);
                    if (landing != null) {
                        return landing;
                    }
                    size = 0;
                }
                return size > 0 ? alloc.directBuffer(size) : super.allocate(alloc);
            }
        };
    }

    private static final int LAND = -1;

    /** LAND, a read size that stops at the end of the next header, or 0 for "any size". */
    private int nextReadSize() {
        if (payloadRemaining > 0) {
            return sink == null ? 0 : LAND; // a dropped payload is read in bulk
        }
        int have = partial == null ? 0 : partial.readableBytes();
        if (frameLength < 0) {
            return Frames.DATA_PREFIX - have; // a whole DATA header if that is what comes, else part of a frame
        }
        return (type == FrameType.DATA ? Frames.DATA_HEADER_BODY : frameLength - 1) - have;
    }

    /** A whole control frame; {@code body} is valid only during the call. */
    protected abstract void onControlFrame(ChannelHandlerContext ctx, FrameType type, ByteBuf body);

    /** A DATA header; returns where the payload goes, or {@code null} to discard it. */
    protected abstract DataSink onDataFrame(ChannelHandlerContext ctx, long sessionId, long writeId, long dstOffset,
                                            int length, boolean lastPiece);

    /** Called before any frame of a read is decoded (liveness: any byte counts). */
    protected void onBytesRead() {
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        partial = ctx.alloc().heapBuffer(256);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (partial != null) {
            partial.release();
            partial = null;
        }
    }

    @Override
    public final void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            onBytesRead();
            decode(ctx, in);
        } finally {
            in.release();
        }
    }

    private void decode(ChannelHandlerContext ctx, ByteBuf in) {
        while (in.isReadable()) {
            if (payloadRemaining > 0) {
                int n = Math.min(payloadRemaining, in.readableBytes());
                if (in == landing) {
                    landing = null;
                    sink.landedInPlace(n); // the read put them there
                } else if (sink != null) {
                    sink.accept(in, in.readerIndex(), n);
                }
                in.skipBytes(n);
                payloadRemaining -= n;
                if (payloadRemaining == 0) {
                    DataSink done = sink;
                    sink = null;
                    if (done != null) {
                        done.finish();
                    }
                }
                continue;
            }
            if (frameLength < 0) {
                ByteBuf prefix = take(in, 5);
                if (prefix == null) {
                    return;
                }
                frameLength = prefix.readInt();
                byte code = prefix.readByte();
                partial.clear();
                type = FrameType.of(code);
                if (type == null) {
                    throw new ProtocolException("unknown frame type " + code);
                }
                int body = frameLength - 1;
                boolean ok = type == FrameType.DATA
                        ? body >= Frames.DATA_HEADER_BODY && body - Frames.DATA_HEADER_BODY <= Frames.MAX_PIECE
                        : body >= 0 && body <= Frames.MAX_CONTROL_BODY;
                if (!ok) {
                    throw new ProtocolException(type + " frame of " + frameLength + " bytes");
                }
                continue;
            }
            boolean data = type == FrameType.DATA;
            ByteBuf body = take(in, data ? Frames.DATA_HEADER_BODY : frameLength - 1);
            if (body == null) {
                return;
            }
            FrameType t = type;
            int length = frameLength;
            frameLength = -1;
            type = null;
            try {
                if (data) {
                    long sessionId = body.readLong();
                    long writeId = body.readLong();
                    long dstOffset = body.readLong();
                    int n = body.readInt();
                    boolean last = (body.readByte() & Frames.FLAG_LAST_PIECE) != 0;
                    if (n != length - 1 - Frames.DATA_HEADER_BODY) {
                        throw new ProtocolException("DATA length " + n + " disagrees with frame length " + length);
                    }
                    payloadRemaining = n;
                    sink = onDataFrame(ctx, sessionId, writeId, dstOffset, n, last);
                    if (n == 0 && sink != null) {
                        DataSink done = sink;
                        sink = null;
                        done.finish();
                    }
                } else {
                    onControlFrame(ctx, t, body);
                }
            } finally {
                partial.clear();
            }
        }
    }

    /** {@code n} bytes as one buffer: a slice of {@code in} when it holds them all, else accumulated. */
    private ByteBuf take(ByteBuf in, int n) {
        if (!partial.isReadable() && in.readableBytes() >= n) {
            return in.readSlice(n);
        }
        int k = Math.min(n - partial.readableBytes(), in.readableBytes());
        partial.writeBytes(in, k);
        return partial.readableBytes() < n ? null : partial;
    }
}
