package dev.ripcord.kv.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class FrameDecoderTest {
    static final UnpooledByteBufAllocator A = UnpooledByteBufAllocator.DEFAULT;

    /** Records what it decodes as text; DATA payloads are collected byte for byte. */
    static final class Recorder extends FrameDecoder {
        final List<String> events = new ArrayList<>();
        final ByteArrayOutputStream payload = new ByteArrayOutputStream();

        @Override
        protected void onControlFrame(ChannelHandlerContext ctx, FrameType type, ByteBuf body) {
            events.add(type + (type == FrameType.HELLO ? ":" + Frames.Hello.decode(body).agentName()
                    : type == FrameType.ABORT ? ":" + body.readLong() + ":" + abort(Frames.Abort.decode(body)) : ""));
        }

        private static String abort(Frames.Abort a) {
            return a.cause() + ":" + a.detail() + (a.cancelReason() == null ? "" : " " + a.cancelReason() + "/"
                    + a.cancelSource());
        }

        @Override
        protected DataSink onDataFrame(ChannelHandlerContext ctx, long sessionId, long writeId, long dstOffset,
                                       int length, boolean lastPiece) {
            events.add("DATA:" + sessionId + ":" + writeId + ":" + dstOffset + ":" + length + ":" + lastPiece);
            if (sessionId == 0) {
                return null; // dropped
            }
            return new DataSink() {
                @Override
                public void accept(ByteBuf buffer, int index, int n) {
                    byte[] b = new byte[n];
                    buffer.getBytes(index, b);
                    payload.writeBytes(b);
                }

                @Override
                public void finish() {
                    events.add("END:" + sessionId);
                }
            };
        }
    }

    /** Appends a frame to a test stream and releases it (the decoder under test never sees these buffers). */
    static void append(ByteBuf stream, ByteBuf frame) {
        stream.writeBytes(frame);
        frame.release();
    }

    @Test
    void abortFrameCarriesTheCancelTypedAndReadsUnknownNamesAsUnknown() {
        ByteBuf frame = Frames.abort(A, 5, 0, "cancelled", CancelReason.CLIENT_STALLED, CancelSource.IN_BAND);
        frame.skipBytes(4 + 1 + 8);
        Frames.Abort typed = Frames.Abort.decode(frame);
        frame.release();
        assertThat(typed.cancelReason()).isEqualTo(CancelReason.CLIENT_STALLED);
        assertThat(typed.cancelSource()).isEqualTo(CancelSource.IN_BAND);

        // A newer peer names a reason and a source this version does not know: read as UNKNOWN, not a crash.
        ByteBuf newer = Unpooled.buffer().writeByte(0).writeShort(0).writeByte(1);
        byte[] reason = "SOLAR_FLARE".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] source = "CARRIER_PIGEON".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        newer.writeShort(reason.length).writeBytes(reason).writeShort(source.length).writeBytes(source);
        Frames.Abort unknown = Frames.Abort.decode(newer);
        assertThat(unknown.cancelReason()).isEqualTo(CancelReason.UNKNOWN);
        assertThat(unknown.cancelSource()).isEqualTo(CancelSource.UNKNOWN);

        // An older peer sends no cancel part at all: an untyped abort.
        ByteBuf older = Unpooled.buffer().writeByte(1).writeShort(0);
        assertThat(Frames.Abort.decode(older).cancelReason()).isNull();
    }

    @Test
    void decodesFramesSplitAtEveryPossibleBoundary() {
        byte[] data = new byte[3000];
        new Random(1).nextBytes(data);
        ByteBuf stream = Unpooled.buffer();
        append(stream, new Frames.Hello(1, 2, 3, 4, "host", "peer").encode(A));
        append(stream, Frames.dataHeader(A, 9, 1, 4096, data.length, true));
        stream.writeBytes(data);
        append(stream, Frames.dataHeader(A, 0, 2, 0, 10, false)); // dropped payload
        stream.writeBytes(new byte[10]);
        append(stream, Frames.heartbeat(A));
        append(stream, Frames.abort(A, 9, 3, "peer lost", null, null));
        append(stream, Frames.abort(A, 9, 0, "cancelled", CancelReason.DEADLINE, CancelSource.KAFKA));
        byte[] all = ByteBufUtil.getBytes(stream);
        stream.release();
        List<String> expected = null;
        Random rnd = new Random(2);
        for (int trial = 0; trial < 300; trial++) {
            Recorder r = new Recorder();
            EmbeddedChannel ch = new EmbeddedChannel(r);
            int at = 0;
            while (at < all.length) {
                int n = trial == 0 ? 1 : 1 + rnd.nextInt(trial < 100 ? 7 : 700);
                n = Math.min(n, all.length - at);
                ch.writeInbound(Unpooled.wrappedBuffer(all, at, n));
                at += n;
            }
            assertThat(r.payload.toByteArray()).isEqualTo(data);
            if (expected == null) {
                expected = r.events;
                assertThat(expected).containsExactly("HELLO:peer", "DATA:9:1:4096:3000:true", "END:9",
                        "DATA:0:2:0:10:false", "HEARTBEAT", "ABORT:9:3:peer lost",
                        "ABORT:9:0:cancelled DEADLINE/KAFKA");
            } else {
                assertThat(r.events).isEqualTo(expected);
            }
            ch.finishAndReleaseAll();
        }
    }

    /** A sink that can also hand out landing buffers over a destination segment, and records how bytes came. */
    static final class LandingRecorder extends FrameDecoder {
        final MemorySegment destination = Arena.ofAuto().allocate(1 << 20);
        final List<String> events = new ArrayList<>();
        int copiedBytes;
        int inPlaceBytes;
        int landingsOpen;

        @Override
        protected void onControlFrame(ChannelHandlerContext ctx, FrameType type, ByteBuf body) {
            events.add(type.toString());
        }

        @Override
        protected DataSink onDataFrame(ChannelHandlerContext ctx, long sessionId, long writeId, long dstOffset,
                                       int length, boolean lastPiece) {
            events.add("DATA:" + length);
            return new DataSink() {
                long next = dstOffset;

                @Override
                public void accept(ByteBuf buffer, int index, int n) {
                    buffer.getBytes(index, destination.asSlice(next, n).asByteBuffer());
                    next += n;
                    copiedBytes += n;
                }

                @Override
                public LandingBuffer landingBuffer(int maxBytes) {
                    landingsOpen++;
                    return new LandingBuffer(destination.asSlice(next, maxBytes), () -> landingsOpen--);
                }

                @Override
                public void landedInPlace(int n) {
                    next += n;
                    inPlaceBytes += n;
                }

                @Override
                public void finish() {
                    events.add("END");
                }
            };
        }
    }

    @Test
    void directLandingReadsPayloadsIntoTheirDestinationAndStopsReadsAtHeaders() {
        byte[] a = new byte[40_000];
        byte[] b = new byte[20_000];
        new Random(3).nextBytes(a);
        new Random(4).nextBytes(b);
        ByteBuf stream = Unpooled.buffer();
        append(stream, new Frames.Hello(1, 2, 3, 4, "host", "peer").encode(A));
        append(stream, Frames.dataHeader(A, 9, 1, 0, a.length, true));
        stream.writeBytes(a);
        append(stream, Frames.heartbeat(A));
        append(stream, Frames.dataHeader(A, 9, 2, 100_000, b.length, true));
        stream.writeBytes(b);
        byte[] bytes = ByteBufUtil.getBytes(stream);
        stream.release();
        stream = Unpooled.wrappedBuffer(bytes);
        LandingRecorder r = new LandingRecorder();
        EmbeddedChannel ch = new EmbeddedChannel(r);
        RecvByteBufAllocator.Handle reads = r.directLanding(new AdaptiveRecvByteBufAllocator()).newHandle();
        Random chunks = new Random(5);
        while (stream.isReadable()) {
            // Netty's read loop: allocate, let the "kernel" fill some of it, hand it to the pipeline.
            ByteBuf buf = reads.allocate(A);
            int n = Math.min(Math.min(buf.writableBytes(), stream.readableBytes()), 1 + chunks.nextInt(30_000));
            buf.writeBytes(stream, n);
            ch.writeInbound(buf);
        }
        assertThat(r.events).containsExactly("HELLO", "DATA:40000", "END", "HEARTBEAT", "DATA:20000", "END");
        assertThat(r.destination.asSlice(0, a.length).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(a);
        assertThat(r.destination.asSlice(100_000, b.length).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(b);
        assertThat(r.copiedBytes).as("bytes that went through a copy").isZero();
        assertThat(r.inPlaceBytes).isEqualTo(a.length + b.length);
        assertThat(r.landingsOpen).as("every landing buffer released").isZero();
        ch.finishAndReleaseAll();
    }

    @Test
    void rejectsGarbage() {
        EmbeddedChannel ch = new EmbeddedChannel(new Recorder());
        assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {0, 0, 0, 5, 99, 0, 0, 0, 0})))
                .isInstanceOf(ProtocolException.class);
        ch.finishAndReleaseAll(); // closing removes the decoder, which frees its header buffer
        EmbeddedChannel ch2 = new EmbeddedChannel(new Recorder());
        assertThatThrownBy(() -> ch2.writeInbound(Unpooled.wrappedBuffer(new byte[] {0x7f, 0, 0, 0, 2})))
                .isInstanceOf(ProtocolException.class);
        ch2.finishAndReleaseAll();
    }
}
