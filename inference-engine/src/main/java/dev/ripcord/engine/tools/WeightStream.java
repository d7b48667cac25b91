package dev.ripcord.engine.tools;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The weight-streaming limit a benchmark compares decode against: how many bytes per second {@code threads} threads
 * read from a model file's own mapping (the page-cache pages decode reads), doing nothing with them but one XOR per
 * vector. Each thread reads a contiguous share of the file as four interleaved sequential streams (one stream per
 * thread leaves the hardware prefetchers short on this machine kind, see docs/engine.md). A pass reads the file
 * as many times as it takes to read at least {@value #PASS_BYTES} bytes (a 600 MB file read once took 15 ms, short
 * enough for one descheduling to halve the figure), and the best of {@code passes} passes counts. A model's decode cannot read its weights faster than this, so
 * {@code bytes/s ÷ weight bytes per token} is its decode ceiling.
 */
final class WeightStream {
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_PREFERRED;
    /** Sequential streams per thread: {@link #read} reads the four quarters of its share side by side. */
    private static final int STREAMS = 4;
    private static final long PASS_BYTES = 2_000_000_000L;
    @SuppressWarnings("unused")
    private static volatile long sink;

    private WeightStream() {
    }

    /** Bytes per second, the best of {@code passes} passes over the whole file with {@code threads} threads. */
    static double bytesPerSecond(Path file, int threads, int passes) throws IOException {
        try (Arena arena = Arena.ofShared(); FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            MemorySegment data = MemorySegment.ofAddress(mapped.address()).reinterpret(mapped.byteSize(), arena, null);
            long step = (long) B.vectorByteSize() * STREAMS;
            long usable = data.byteSize() / ((long) threads * step) * ((long) threads * step);
            if (usable == 0) {
                return Double.NaN;
            }
            read(data, 0, usable / threads); // pages mapped into this process, and the loop compiled
            double best = 0;
            long repeats = (PASS_BYTES + usable - 1) / usable;
            for (int p = 0; p < passes; p++) {
                Thread[] workers = new Thread[threads];
                long share = usable / threads;
                long t0 = System.nanoTime();
                for (int t = 0; t < threads; t++) {
                    long from = t * share;
                    workers[t] = Thread.ofPlatform().start(() -> {
                        for (long i = 0; i < repeats; i++) {
                            sink += read(data, from, share);
                        }
                    });
                }
                for (Thread w : workers) {
                    try {
                        w.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while measuring the weight stream", e);
                    }
                }
                best = Math.max(best, repeats * usable / ((System.nanoTime() - t0) / 1e9));
            }
            return best;
        }
    }

    /** XOR of every vector in {@code [from, from + length)}, read as {@link #STREAMS} interleaved streams. */
    private static long read(MemorySegment data, long from, long length) {
        int vb = B.vectorByteSize();
        long quarter = length / STREAMS / vb * vb;
        ByteVector acc = ByteVector.zero(B);
        for (long o = 0; o < quarter; o += vb) {
            long a = from + o;
            acc = acc.lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, data, a, ByteOrder.LITTLE_ENDIAN))
                    .lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, data, a + quarter, ByteOrder.LITTLE_ENDIAN))
                    .lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, data, a + 2 * quarter, ByteOrder.LITTLE_ENDIAN))
                    .lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, data, a + 3 * quarter, ByteOrder.LITTLE_ENDIAN));
        }
        return acc.reduceLanesToLong(VectorOperators.XOR);
    }
}
