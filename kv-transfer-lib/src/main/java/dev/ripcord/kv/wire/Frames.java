package dev.ripcord.kv.wire;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.nio.charset.StandardCharsets;

/**
 * Encodes the protocol's frames. Every frame is {@code int length} (bytes after the length field), {@code byte type},
 * then the type's body; all integers big-endian. A DATA frame's body is a fixed header followed by {@code length}
 * payload bytes, which the sender writes straight from the source segment (no copy) and the receiver streams
 * straight into the destination segment (see {@link FrameDecoder}).
 *
 * <p>Internal: not part of the library's API.
 */
public final class Frames {
    /** "RKV1". */
    static final int MAGIC = 0x524B5631;
    static final short VERSION = 1;
    /** Body bytes of a DATA frame before its payload: session, write id, destination offset, length, flags. */
    static final int DATA_HEADER_BODY = 8 + 8 + 8 + 4 + 1;
    /** Bytes before the payload on the wire: length field, type, DATA header body. */
    static final int DATA_PREFIX = 4 + 1 + DATA_HEADER_BODY;
    static final int FLAG_LAST_PIECE = 1;
    /** Largest body of any frame other than DATA. */
    static final int MAX_CONTROL_BODY = 1 << 20;
    /** Largest completion metadata (a first token, a few ids: small by design). */
    public static final int MAX_METADATA = 64 * 1024;
    /** Largest DATA payload. */
    static final int MAX_PIECE = 64 << 20;

    private Frames() {
    }

    /**
     * The first frame each side sends. {@code hostId} is a digest that says only whether two agents share a host
     * (see {@code HostIdentity}): never a hostname or a boot id.
     */
    public record Hello(long incarnation, long pid, long pidStartMillis, int leaseMillis, String hostId,
                        String agentName) {

        public ByteBuf encode(ByteBufAllocator alloc) {
            byte[] host = utf8(hostId);
            byte[] name = utf8(agentName);
            ByteBuf b = start(alloc, FrameType.HELLO, 4 + 2 + 8 + 8 + 8 + 4 + 2 + host.length + 2 + name.length);
            b.writeInt(MAGIC).writeShort(VERSION).writeLong(incarnation).writeLong(pid).writeLong(pidStartMillis)
                    .writeInt(leaseMillis);
            b.writeShort(host.length).writeBytes(host);
            b.writeShort(name.length).writeBytes(name);
            return b;
        }

        public static Hello decode(ByteBuf body) {
            int magic = body.readInt();
            short version = body.readShort();
            if (magic != MAGIC || version != VERSION) {
                throw new ProtocolException("not a Ripcord KV transfer peer (magic %08x, version %d)".formatted(magic,
                        version));
            }
            return new Hello(body.readLong(), body.readLong(), body.readLong(), body.readInt(), readString(body),
                    readString(body));
        }
    }

    public static ByteBuf heartbeat(ByteBufAllocator alloc) {
        return start(alloc, FrameType.HEARTBEAT, 0);
    }

    public static ByteBuf attach(ByteBufAllocator alloc, long sessionId, long token, long epoch,
                                 boolean sharedMemory) {
        return start(alloc, FrameType.ATTACH, 8 + 8 + 8 + 1).writeLong(sessionId).writeLong(token).writeLong(epoch)
                .writeByte(sharedMemory ? 1 : 0);
    }

    public static ByteBuf attached(ByteBufAllocator alloc, long sessionId) {
        return start(alloc, FrameType.ATTACHED, 8).writeLong(sessionId);
    }

    /** The prefix of a DATA frame; the caller writes exactly {@code length} payload bytes after it. */
    public static ByteBuf dataHeader(ByteBufAllocator alloc, long sessionId, long writeId, long dstOffset,
                                     int length, boolean lastPiece) {
        ByteBuf b = alloc.directBuffer(DATA_PREFIX, DATA_PREFIX);
        b.writeInt(1 + DATA_HEADER_BODY + length).writeByte(FrameType.DATA.code());
        return b.writeLong(sessionId).writeLong(writeId).writeLong(dstOffset).writeInt(length)
                .writeByte(lastPiece ? FLAG_LAST_PIECE : 0);
    }

    public static ByteBuf shmWritten(ByteBufAllocator alloc, long sessionId, long writeId, long dstOffset,
                                     long length) {
        return start(alloc, FrameType.SHM_WRITTEN, 32).writeLong(sessionId).writeLong(writeId).writeLong(dstOffset)
                .writeLong(length);
    }

    public static ByteBuf writeAck(ByteBufAllocator alloc, long sessionId, long writeId, long length) {
        return start(alloc, FrameType.WRITE_ACK, 24).writeLong(sessionId).writeLong(writeId).writeLong(length);
    }

    public static ByteBuf complete(ByteBufAllocator alloc, long sessionId, long totalBytes, byte[] metadata) {
        return start(alloc, FrameType.COMPLETE, 8 + 8 + 4 + metadata.length).writeLong(sessionId)
                .writeLong(totalBytes).writeInt(metadata.length).writeBytes(metadata);
    }

    public static ByteBuf completed(ByteBufAllocator alloc, long sessionId) {
        return start(alloc, FrameType.COMPLETED, 8).writeLong(sessionId);
    }

    /**
     * ABORT: session, cause ordinal, detail; then, appended so that a peer that predates it ignores it, the typed
     * cancel: a presence byte and, when 1, the reason's and the source's enum names.
     */
    public static ByteBuf abort(ByteBufAllocator alloc, long sessionId, int cause, String detail,
                                CancelReason cancelReason, CancelSource cancelSource) {
        byte[] text = utf8(detail.length() > 1000 ? detail.substring(0, 1000) : detail);
        boolean typed = cancelReason != null && cancelSource != null;
        byte[] reason = typed ? utf8(cancelReason.name()) : new byte[0];
        byte[] source = typed ? utf8(cancelSource.name()) : new byte[0];
        ByteBuf b = start(alloc, FrameType.ABORT, 8 + 1 + 2 + text.length + 1
                + (typed ? 2 + reason.length + 2 + source.length : 0));
        b.writeLong(sessionId).writeByte(cause).writeShort(text.length).writeBytes(text).writeByte(typed ? 1 : 0);
        if (typed) {
            b.writeShort(reason.length).writeBytes(reason).writeShort(source.length).writeBytes(source);
        }
        return b;
    }

    /** The body of an ABORT frame after its session id. */
    public record Abort(int cause, String detail, CancelReason cancelReason, CancelSource cancelSource) {

        /** Reads what follows the session id; an unknown reason or source reads as {@code UNKNOWN}. */
        public static Abort decode(ByteBuf body) {
            int cause = body.readByte();
            String detail = readString(body);
            if (!body.isReadable() || body.readByte() == 0) {
                return new Abort(cause, detail, null, null); // no cancel, or a peer that predates typed causes
            }
            return new Abort(cause, detail, CancelReason.fromWire(readString(body)),
                    CancelSource.fromWire(readString(body)));
        }
    }

    public static ByteBuf abortAck(ByteBufAllocator alloc, long sessionId) {
        return start(alloc, FrameType.ABORT_ACK, 8).writeLong(sessionId);
    }

    public static ByteBuf regionClosed(ByteBufAllocator alloc, long regionId) {
        return start(alloc, FrameType.REGION_CLOSED, 8).writeLong(regionId);
    }

    static String readString(ByteBuf body) {
        int n = body.readUnsignedShort();
        String s = body.toString(body.readerIndex(), n, StandardCharsets.UTF_8);
        body.skipBytes(n);
        return s;
    }

    public static byte[] readBytes(ByteBuf body, int max) {
        int n = body.readInt();
        if (n < 0 || n > max) {
            throw new ProtocolException("byte field of " + n + " bytes (max " + max + ")");
        }
        byte[] out = new byte[n];
        body.readBytes(out);
        return out;
    }

    private static ByteBuf start(ByteBufAllocator alloc, FrameType type, int bodyBytes) {
        ByteBuf b = alloc.buffer(5 + bodyBytes);
        return b.writeInt(1 + bodyBytes).writeByte(type.code());
    }

    private static byte[] utf8(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > Short.MAX_VALUE) {
            throw new IllegalArgumentException("string field longer than " + Short.MAX_VALUE + " bytes");
        }
        return b;
    }
}
