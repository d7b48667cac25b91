package dev.ripcord.stack.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What this machine can move right now, for one burst of a given size: a {@code memcpy} between two off-heap segments
 * (the shared-memory backend's floor) and a loopback TCP send of the same bytes, measured up to the receiver having
 * read the last byte (the TCP backend's floor). A bench calls {@link #sample} between its own rounds so that the
 * limits and the services' figures see the same load; {@link #memcpyRate()} and {@link #tcpRate()} are medians.
 *
 * <p>Owns its buffers ({@link Arena#ofShared()}) and its socket pair; {@link #close()} releases both.
 */
final class CopyLimits implements AutoCloseable {

    private final long bytes;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment source;
    private final MemorySegment target;
    private final ServerSocketChannel server;
    private final SocketChannel sender;
    private final SocketChannel receiver;
    private final ByteBuffer sendBuffer;
    private final ByteBuffer receiveBuffer;
    private final List<Double> memcpy = new ArrayList<>();
    private final List<Double> tcp = new ArrayList<>();

    /** @param bytes one burst: the size each sample copies and sends */
    CopyLimits(long bytes) {
        this.bytes = Math.max(4096, bytes);
        this.source = arena.allocate(this.bytes, 64).fill((byte) 7);
        this.target = arena.allocate(this.bytes, 64);
        int socketBuffer = (int) Math.min(this.bytes, 4 << 20);
        try {
            server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            sender = SocketChannel.open(server.getLocalAddress());
            receiver = server.accept();
            sender.setOption(StandardSocketOptions.TCP_NODELAY, true);
            sender.setOption(StandardSocketOptions.SO_SNDBUF, socketBuffer);
            receiver.setOption(StandardSocketOptions.SO_RCVBUF, socketBuffer);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a loopback socket pair", e);
        }
        sendBuffer = ByteBuffer.allocateDirect((int) Math.min(this.bytes, 1 << 20));
        receiveBuffer = ByteBuffer.allocateDirect((int) Math.min(this.bytes, 1 << 20));
    }

    long burstBytes() {
        return bytes;
    }

    /** One memcpy and one loopback send of a burst, each timed on its own; the first of each is a warm-up. */
    void sample() throws Exception {
        long start = System.nanoTime();
        MemorySegment.copy(source, 0, target, 0, bytes);
        memcpy.add(bytes / ((System.nanoTime() - start) / 1e9));

        Thread reading = Thread.ofPlatform().daemon().name("copy-limits-reader").start(() -> {
            try {
                long left = bytes;
                while (left > 0) {
                    receiveBuffer.clear().limit((int) Math.min(receiveBuffer.capacity(), left));
                    left -= receiver.read(receiveBuffer);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        start = System.nanoTime();
        long left = bytes;
        while (left > 0) {
            sendBuffer.clear().limit((int) Math.min(sendBuffer.capacity(), left));
            left -= sender.write(sendBuffer);
        }
        reading.join();
        tcp.add(bytes / ((System.nanoTime() - start) / 1e9));
    }

    /** Median memcpy rate, bytes per second; NaN before {@link #sample}. */
    double memcpyRate() {
        return median(memcpy);
    }

    /** Median loopback TCP rate, bytes per second; NaN before {@link #sample}. */
    double tcpRate() {
        return median(tcp);
    }

    int samples() {
        return memcpy.size();
    }

    private static double median(List<Double> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    @Override
    public void close() {
        try (server; sender; receiver) {
            // closes the sockets
        } catch (IOException e) {
            // nothing left to do
        } finally {
            arena.close();
        }
    }
}
