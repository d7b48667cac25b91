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
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One KV transfer session of {@code mib} MiB per operation, next to the raw limits measured in the same run:
 * <ul>
 *   <li>{@code copy}: one {@code MemorySegment.copy} from private memory into a shared-memory file mapping — the
 *   limit of the shm backend, which does exactly that copy (plus fence CASes and control frames);</li>
 *   <li>{@code socket}: a blocking loopback {@link SocketChannel} writing from a direct buffer and reading into
 *   one — the limit of the TCP backend (which adds a Netty event loop and one user-space copy on receive);</li>
 *   <li>{@code tcp} / {@code shm}: a full session through the library: open, descriptor, connect, one send of
 *   the whole span (cut into 1 MiB pieces), complete, wait for both sides RELEASED. Agents and their connection
 *   live for the whole trial, as in a service.</li>
 *   <li>{@code tcp-pages} / {@code shm-pages}: the same session, but the span goes as {@value #PAGE_BYTES}-byte
 *   pages scattered in the source (in reverse order), one {@code send} per page: how prefill posted a chunk's
 *   pages before it batched them, one announcement and one acknowledgement per page.</li>
 *   <li>{@code tcp-batch} / {@code shm-batch}: the same scattered pages as one {@code sendBatch}: how prefill posts
 *   them now, one announcement and one acknowledgement per batch.</li>
 * </ul>
 * Throughput = {@code mib} / (ms/op). Run: {@code ./ripcord bench kv-transfer-lib TransferBenchmark}. Trials run one
 * after another, so on a machine shared with other work the raw and library figures may come from different load;
 * {@link TransferBench} interleaves them instead.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-Dkv.log.level=WARN"})
public class TransferBenchmark {

    /** Page size of the {@code -pages} and {@code -batch} paths: about one 64-token page of the {@code small} preset. */
    static final int PAGE_BYTES = 512 << 10;

    @Param({"copy", "socket", "tcp", "shm", "tcp-pages", "shm-pages", "tcp-batch", "shm-batch"})
    public String path;

    @Param({"1", "4", "16", "64", "256"})
    public int mib;

    private long bytes;
    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;
    private Path mappedFile;
    // socket
    private ServerSocketChannel server;
    private SocketChannel writer;
    private SocketChannel reader;
    private Thread readerThread;
    private final AtomicLong bytesRead = new AtomicLong();
    private long expected;
    // library
    private TransferAgent decode;
    private TransferAgent prefill;
    private KvRegion pool;
    private KvRegion source;
    private long requests;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        bytes = (long) mib << 20;
        arena = Arena.ofShared();
        switch (path) {
            case "copy" -> {
                src = arena.allocate(bytes, 4096);
                src.fill((byte) 1);
                mappedFile = Files.createTempFile(Path.of("/dev/shm"), "kv-bench", ".bin");
                try (FileChannel ch = FileChannel.open(mappedFile, StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
                    dst = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
                }
            }
            case "socket" -> setUpSocket();
            case "tcp", "shm", "tcp-pages", "shm-pages", "tcp-batch", "shm-batch" -> {
                Backend backend = path.startsWith("tcp") ? Backend.TCP : Backend.AUTO;
                decode = TransferAgent.start(TransferAgentOptions.defaults("bench-decode").withBackend(backend));
                prefill = TransferAgent.start(TransferAgentOptions.defaults("bench-prefill").withBackend(backend));
                pool = decode.allocateRegion(bytes);
                src = arena.allocate(bytes, 4096); // the same kind of source memory as the raw paths
                src.fill((byte) 1);
                source = prefill.registerRegion(src);
                transfer(); // connects; first touch of every page
            }
            default -> throw new IllegalArgumentException(path);
        }
    }

    private void setUpSocket() throws IOException {
        src = arena.allocate(bytes, 4096);
        dst = arena.allocate(Math.min(bytes, 16L << 20), 4096);
        server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        writer = SocketChannel.open(server.getLocalAddress());
        reader = server.accept();
        writer.socket().setTcpNoDelay(true);
        readerThread = Thread.ofPlatform().daemon().start(() -> {
            ByteBuffer in = dst.asByteBuffer();
            try {
                while (true) {
                    in.clear();
                    int n = reader.read(in);
                    if (n < 0) {
                        return;
                    }
                    bytesRead.addAndGet(n);
                }
            } catch (IOException e) {
                // closed at teardown
            }
        });
    }

    @Benchmark
    public long transfer() throws Exception {
        switch (path) {
            case "copy" -> MemorySegment.copy(src, 0, dst, 0, bytes);
            case "socket" -> {
                expected += bytes;
                ByteBuffer out = src.asByteBuffer();
                while (out.hasRemaining()) {
                    writer.write(out);
                }
                while (bytesRead.get() < expected) {
                    LockSupport.parkNanos(1000);
                }
            }
            default -> {
                ReceiveSession rx = decode.openReceive("bench-" + ++requests, pool,
                        List.of(new ByteRange(0, bytes)));
                SendSession tx = prefill.connect(rx.descriptor());
                switch (path) {
                    case "tcp-pages", "shm-pages" -> {
                        List<ByteRange> pages = scatteredPages();
                        for (int i = 0; i < pages.size(); i++) {
                            tx.send(source, pages.get(i).offset(), PAGE_BYTES, (long) i * PAGE_BYTES);
                        }
                    }
                    case "tcp-batch", "shm-batch" -> tx.sendBatch(source, scatteredPages(), 0);
                    default -> tx.send(source, 0, bytes, 0);
                }
                tx.complete(new byte[] {1}).get(60, TimeUnit.SECONDS);
                rx.released().get(60, TimeUnit.SECONDS);
                tx.released().get(60, TimeUnit.SECONDS);
            }
        }
        return bytes;
    }

    /** The source pages of the span, in reverse order: logical page i is source page (n - 1 - i). */
    private List<ByteRange> scatteredPages() {
        int n = (int) (bytes / PAGE_BYTES);
        return java.util.stream.IntStream.range(0, n)
                .mapToObj(i -> new ByteRange((long) (n - 1 - i) * PAGE_BYTES, PAGE_BYTES)).toList();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        if (prefill != null) {
            source.close();
            prefill.close();
        }
        if (decode != null) {
            pool.close();
            decode.close();
        }
        if (writer != null) {
            writer.close();
            reader.close();
            server.close();
            readerThread.join(1000);
        }
        arena.close();
        if (mappedFile != null) {
            Files.deleteIfExists(mappedFile);
        }
    }
}
