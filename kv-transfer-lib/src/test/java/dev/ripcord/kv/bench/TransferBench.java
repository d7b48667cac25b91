package dev.ripcord.kv.bench;

import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.kv.SendSession;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Backend throughput next to the raw limits, measured interleaved: each round runs raw copy, shm, raw socket and
 * TCP back to back (and the same session posted as one send per scattered 512 KiB page, {@code -pages}, or as one
 * {@code sendBatch} of those pages, {@code -batch}: prefill's old per-page posting and its batched one; leave those
 * out with {@code -Dbench.wholeOnly=true}), so load from other processes hits all four alike (on a shared 2-core machine the sequential
 * trials of a JMH run can differ by 2x for reasons that have nothing to do with the code). Prints, per size, the
 * median and the best round of each path and the backend/raw ratios. Every path reads the same source memory.
 *
 * <pre>
 * ./ripcord bench kv-transfer-lib -l     # compiles test classes, writes kv-transfer-lib/target/bench.classpath
 * $(./ripcord java | head -1)/bin/java --enable-native-access=ALL-UNNAMED -Xmx512m \
 *   -cp "kv-transfer-lib/target/test-classes:kv-transfer-lib/target/classes:$(cat kv-transfer-lib/target/bench.classpath)" \
 *   dev.ripcord.kv.bench.TransferBench [rounds] [sizes in MiB...]
 * </pre>
 */
public final class TransferBench {
    private static final long MIB = 1 << 20;

    private final long max;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment source;
    private final MemorySegment copyTarget;
    private final Path copyFile;
    private final MemorySegment socketTarget;
    private final SocketChannel writer;
    private final SocketChannel reader;
    private final ServerSocketChannel server;
    private final Thread socketReader;
    private final AtomicLong socketRead = new AtomicLong();
    private final AtomicLong socketWant = new AtomicLong();
    private final TransferAgent tcpDecode;
    private final TransferAgent tcpPrefill;
    private final TransferAgent shmDecode;
    private final TransferAgent shmPrefill;
    private final KvRegion tcpPool;
    private final KvRegion tcpSource;
    private final KvRegion shmPool;
    private final KvRegion shmSource;
    private long requests;

    private TransferBench(long max) throws IOException {
        this.max = max;
        source = arena.allocate(max, 4096);
        source.fill((byte) 7);
        copyFile = Files.createTempFile(Path.of("/dev/shm"), "kv-bench", ".bin");
        try (FileChannel ch = FileChannel.open(copyFile, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            copyTarget = ch.map(FileChannel.MapMode.READ_WRITE, 0, max, arena);
        }
        socketTarget = arena.allocate(max, 4096);
        server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        writer = SocketChannel.open(server.getLocalAddress());
        reader = server.accept();
        writer.socket().setTcpNoDelay(true);
        socketReader = Thread.ofPlatform().daemon().name("raw-socket-reader").start(this::readSocket);
        tcpDecode = TransferAgent.start(TransferAgentOptions.defaults("bench-decode-tcp").withBackend(Backend.TCP));
        tcpPrefill = TransferAgent.start(TransferAgentOptions.defaults("bench-prefill-tcp")
                .withBackend(Backend.TCP));
        shmDecode = TransferAgent.start(TransferAgentOptions.defaults("bench-decode-shm").withBackend(Backend.SHM));
        shmPrefill = TransferAgent.start(TransferAgentOptions.defaults("bench-prefill-shm")
                .withBackend(Backend.SHM));
        tcpPool = tcpDecode.allocateRegion(max);
        shmPool = shmDecode.allocateRegion(max);
        tcpSource = tcpPrefill.registerRegion(source);
        shmSource = shmPrefill.registerRegion(source);
    }

    /** Reads into the destination at increasing offsets, like a receiver landing pages (one kernel copy). */
    private void readSocket() {
        long at = 0;
        try {
            while (true) {
                long n = Math.min(MIB, max - at);
                int got = reader.read(socketTarget.asSlice(at, n).asByteBuffer());
                if (got < 0) {
                    return;
                }
                at = (at + got) % max;
                socketRead.addAndGet(got);
            }
        } catch (IOException e) {
            // closed at the end
        }
    }

    private void copy(long bytes) {
        MemorySegment.copy(source, 0, copyTarget, 0, bytes);
    }

    private void socket(long bytes) throws IOException {
        long want = socketWant.addAndGet(bytes);
        ByteBuffer out = source.asSlice(0, bytes).asByteBuffer();
        while (out.hasRemaining()) {
            writer.write(out);
        }
        while (socketRead.get() < want) {
            LockSupport.parkNanos(2_000);
        }
    }

    /** How a session posts its bytes: one send; one send per scattered page; the same pages as one batch. */
    private enum Posting { WHOLE, PAGES, BATCH }

    private void session(TransferAgent decode, TransferAgent prefill, KvRegion pool, KvRegion src, long bytes)
            throws Exception {
        session(decode, prefill, pool, src, bytes, Posting.WHOLE);
    }

    private void session(TransferAgent decode, TransferAgent prefill, KvRegion pool, KvRegion src, long bytes,
                         Posting posting) throws Exception {
        ReceiveSession rx = decode.openReceive("bench-" + ++requests, pool, List.of(new ByteRange(0, bytes)));
        SendSession tx = prefill.connect(rx.descriptor());
        switch (posting) {
            case WHOLE -> tx.send(src, 0, bytes, 0);
            case PAGES -> {
                List<ByteRange> pages = scatteredPages(bytes);
                for (int i = 0; i < pages.size(); i++) {
                    tx.send(src, pages.get(i).offset(), PAGE_BYTES, (long) i * PAGE_BYTES);
                }
            }
            case BATCH -> tx.sendBatch(src, scatteredPages(bytes), 0);
        }
        tx.complete(new byte[] {1}).get(60, TimeUnit.SECONDS);
        rx.released().get(60, TimeUnit.SECONDS);
        tx.released().get(60, TimeUnit.SECONDS);
    }

    /** Page size of the -pages and -batch paths: about one 64-token page of the {@code small} preset. */
    private static final long PAGE_BYTES = 512 << 10;

    /** The span's pages in reverse order: logical page i is source page (n - 1 - i), as a pool scatters them. */
    private static List<ByteRange> scatteredPages(long bytes) {
        int n = (int) (bytes / PAGE_BYTES);
        return java.util.stream.IntStream.range(0, n)
                .mapToObj(i -> new ByteRange((n - 1 - i) * PAGE_BYTES, PAGE_BYTES)).toList();
    }

    private interface Op {
        void run(long bytes) throws Exception;
    }

    /** Seconds per operation over {@code ops} back-to-back operations. */
    private static double time(Op op, long bytes, int ops) throws Exception {
        long t0 = System.nanoTime();
        for (int i = 0; i < ops; i++) {
            op.run(bytes);
        }
        return (System.nanoTime() - t0) / 1e9 / ops;
    }

    private void close() throws Exception {
        writer.close();
        reader.close();
        server.close();
        socketReader.join(); // it holds the arena while blocked in read()
        tcpPool.close();
        shmPool.close();
        tcpSource.close();
        shmSource.close();
        tcpPrefill.close();
        shmPrefill.close();
        tcpDecode.close();
        shmDecode.close();
        arena.close();
        Files.deleteIfExists(copyFile);
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
        long[] sizes = args.length > 1 ? Arrays.stream(args, 1, args.length).mapToLong(Long::parseLong).toArray()
                : new long[] {1, 4, 16, 64, 256};
        long max = Arrays.stream(sizes).max().orElseThrow() * MIB;
        System.out.printf("JDK %s, %d CPUs, load average at start: %s%n", Runtime.version(),
                Runtime.getRuntime().availableProcessors(), Files.readAllLines(Path.of("/proc/loadavg")).getFirst());
        TransferBench b = new TransferBench(max);
        Map<String, Op> paths = new LinkedHashMap<>();
        paths.put("copy", b::copy);
        paths.put("shm", n -> b.session(b.shmDecode, b.shmPrefill, b.shmPool, b.shmSource, n));
        paths.put("socket", b::socket);
        paths.put("tcp", n -> b.session(b.tcpDecode, b.tcpPrefill, b.tcpPool, b.tcpSource, n));
        if (!Boolean.getBoolean("bench.wholeOnly")) {
            // how prefill posts a chunk's pages: one send per 512 KiB page (as it once did), one batch (as it does)
            paths.put("shm-pages", n -> b.session(b.shmDecode, b.shmPrefill, b.shmPool, b.shmSource, n,
                    Posting.PAGES));
            paths.put("shm-batch", n -> b.session(b.shmDecode, b.shmPrefill, b.shmPool, b.shmSource, n,
                    Posting.BATCH));
            paths.put("tcp-pages", n -> b.session(b.tcpDecode, b.tcpPrefill, b.tcpPool, b.tcpSource, n,
                    Posting.PAGES));
            paths.put("tcp-batch", n -> b.session(b.tcpDecode, b.tcpPrefill, b.tcpPool, b.tcpSource, n,
                    Posting.BATCH));
        }
        System.out.println("size    | path      | median GiB/s | best GiB/s | median ratio | best ratio");
        try {
            for (long mib : sizes) {
                long bytes = mib * MIB;
                int ops = (int) Math.max(1, Math.min(64, 256 / mib)); // ~256 MiB of traffic per round and path
                for (Op op : paths.values()) {
                    time(op, bytes, Math.max(ops, 4)); // warm-up
                }
                Map<String, List<Double>> gibs = new LinkedHashMap<>();
                for (int r = 0; r < rounds; r++) {
                    for (Map.Entry<String, Op> p : paths.entrySet()) {
                        double s = time(p.getValue(), bytes, ops);
                        gibs.computeIfAbsent(p.getKey(), k -> new ArrayList<>()).add(bytes / s / (1L << 30));
                    }
                }
                for (String p : paths.keySet()) {
                    String raw = p.startsWith("shm") ? "copy" : p.startsWith("tcp") ? "socket" : null;
                    double med = median(gibs.get(p));
                    double best = best(gibs.get(p));
                    System.out.printf("%4d MiB | %-9s | %12.2f | %10.2f | %12s | %10s%n", mib, p, med, best,
                            raw == null ? "" : "%.0f %%".formatted(100 * med / median(gibs.get(raw))),
                            raw == null ? "" : "%.0f %%".formatted(100 * best / best(gibs.get(raw))));
                }
            }
        } finally {
            b.close();
        }
        System.out.printf("load average at end: %s%n", Files.readAllLines(Path.of("/proc/loadavg")).getFirst());
    }

    private static double median(List<Double> xs) {
        double[] s = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static double best(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
    }
}
