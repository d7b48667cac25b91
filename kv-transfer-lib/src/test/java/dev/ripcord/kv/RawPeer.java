package dev.ripcord.kv;

import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;

/**
 * A hand-driven protocol peer over a plain socket, for tests that need a peer doing exactly the wrong thing at
 * the wrong time (half a payload, then silence; never reading; writing after an abort).
 */
final class RawPeer implements Closeable {
    static final ByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    record Frame(FrameType type, ByteBuf body) {
    }

    final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;

    RawPeer(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new DataInputStream(socket.getInputStream());
        this.out = new BufferedOutputStream(socket.getOutputStream());
    }

    static Frames.Hello hello(long incarnation, String name) {
        // A host id no real agent has: the peer never counts as same-host.
        return new Frames.Hello(incarnation, 1, 0, 60_000, "fake-host/0", name);
    }

    void send(ByteBuf frame) throws IOException {
        try {
            out.write(ByteBufUtil.getBytes(frame));
            out.flush();
        } finally {
            frame.release();
        }
    }

    void sendRaw(byte[] bytes, int from, int length) throws IOException {
        out.write(bytes, from, length);
        out.flush();
    }

    Frame read() throws IOException {
        int length = in.readInt();
        FrameType type = FrameType.of(in.readByte());
        byte[] body = new byte[length - 1];
        in.readFully(body);
        return new Frame(type, Unpooled.wrappedBuffer(body));
    }

    /** Reads frames until one of {@code type} (for session {@code sessionId} when >= 0). */
    Frame readUntil(FrameType type, long sessionId) throws IOException {
        while (true) {
            Frame f = read();
            if (f.type() == type && (sessionId < 0 || f.body().getLong(0) == sessionId)) {
                return f;
            }
        }
    }

    void skip(long bytes) throws IOException {
        long left = bytes;
        while (left > 0) {
            long n = in.skip(left);
            if (n <= 0) {
                in.readByte();
                n = 1;
            }
            left -= n;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
