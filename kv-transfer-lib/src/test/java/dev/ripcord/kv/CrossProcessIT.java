package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.shm.HostIdentity;
import dev.ripcord.kv.shm.ShmFiles;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import dev.ripcord.kv.testing.KvLeakCheck;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The real thing: a second JVM ({@link PeerMain}) on the other end of real TCP and shared-memory transfers, then
 * killed with -9, or frozen with SIGSTOP so it falls silent while its sockets stay open.
 */
@ExtendWith(KvLeakCheck.class)
@EnabledOnOs(value = OS.LINUX, disabledReason = "SIGSTOP/SIGCONT and /dev/shm shared memory between two JVMs: "
        + "Linux only")
class CrossProcessIT {
    static final int MIB = 1 << 20;
    static final Duration WAIT = Duration.ofSeconds(30);

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final List<AutoCloseable> closeLast = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable c : closeLast.reversed()) {
            c.close();
        }
        ShmFiles.sweepStale(TransferAgentOptions.defaultShmDirectory()); // files of the child we killed with -9
    }

    TransferAgent agent(TransferAgentOptions options) {
        TransferAgent a = TransferAgent.start(options.withMeterRegistry(registry));
        closeLast.add(a);
        return a;
    }

    /** A child JVM running {@link PeerMain}. */
    static final class Peer implements AutoCloseable {
        final Process process;
        final long pid;
        private final PrintStream commands;
        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final List<String> seen = new ArrayList<>();

        Peer(long leaseMillis) throws Exception {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            process = new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector",
                    "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                    "-Dkv.log.level=WARN", "-cp", System.getProperty("java.class.path"), PeerMain.class.getName(),
                    Long.toString(leaseMillis))
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            commands = new PrintStream(process.getOutputStream(), true);
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        lines.add(l);
                    }
                } catch (IOException e) {
                    // the process died
                }
            });
            pid = Long.parseLong(await("READY ").split(" ")[1]);
        }

        void send(String command) {
            commands.println(command);
        }

        /** The next event line starting with {@code prefix} (log lines and other events are kept, skipped). */
        String await(String prefix) throws InterruptedException {
            for (String l : seen) {
                if (l.startsWith(prefix)) {
                    seen.remove(l);
                    return l;
                }
            }
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                String l = lines.poll(100, TimeUnit.MILLISECONDS);
                if (l == null) {
                    continue;
                }
                if (l.startsWith(prefix)) {
                    return l;
                }
                seen.add(l);
            }
            throw new AssertionError("peer never said '" + prefix + "'; it said: " + seen);
        }

        void signal(String sig) throws Exception {
            assertThat(new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).start().waitFor()).isZero();
        }

        @Override
        public void close() throws Exception {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    Peer peer(long leaseMillis) throws Exception {
        Peer p = new Peer(leaseMillis);
        closeLast.addFirst(p); // cleanUp runs in reverse: agents close first, then the child is killed
        return p;
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void transfersAcrossProcessesOverTcpAndSharedMemory() throws Exception {
        Peer peer = peer(5000);
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        KvRegion pool = decode.allocateRegion(32 * MIB);
        for (String via : List.of("tcp", "auto")) {
            long tag = via.equals("tcp") ? 1 : 2;
            // Two target ranges, out of order, so the sender's offsets really are mapped.
            List<ByteRange> targets = List.of(new ByteRange(20 * MIB, 6 * MIB), new ByteRange(2 * MIB, 10 * MIB));
            ReceiveSession rx = decode.openReceive("xp-" + via, pool, targets);
            peer.send("SEND " + via + " " + tag + " " + MIB + " complete " + rx.descriptor().encode());
            assertThat(peer.await("DONE " + tag)).endsWith(via.equals("tcp") ? "TCP" : "SHM");
            assertThat(ByteBuffer.wrap(get(rx.completion())).getLong()).isEqualTo(tag);
            assertThat(get(rx.released())).isEqualTo(SessionState.COMPLETED);
            assertThat(Patterns.firstMismatch(pool.segment(), 20 * MIB, 6 * MIB, tag, 0)).isEqualTo(-1);
            assertThat(Patterns.firstMismatch(pool.segment(), 2 * MIB, 10 * MIB, tag, 6 * MIB)).isEqualTo(-1);
        }
        // And the other way: the child receives, we send (same host: shared memory into the child's file).
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill"));
        KvRegion src = prefill.allocateRegion(8 * MIB);
        Patterns.fill(src.segment(), 0, 8 * MIB, 3, 0);
        peer.send("RECV 3 " + 8 * MIB);
        SendSession tx = prefill.connect(ReceiveDescriptor.parse(peer.await("DESC 3 ").split(" ")[2]));
        assertThat(tx.backend()).isEqualTo(Backend.SHM);
        tx.send(src, 0, 8 * MIB, 0);
        get(tx.complete(new byte[] {3}));
        assertThat(peer.await("RECV_ENDED 3")).isEqualTo("RECV_ENDED 3 COMPLETED ok");
        pool.close();
        src.close();
    }

    @Test
    void peerDeathAbortsAndReleasesOnSurvivor() throws Exception {
        Peer peer = peer(5000);
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill"));
        KvRegion pool = decode.allocateRegion(32 * MIB);
        // The child streams into two of our receive sessions, one per backend, and receives from one of ours.
        ReceiveSession viaTcp = decode.openReceive("dead-tcp", pool, List.of(new ByteRange(0, 16 * MIB)));
        ReceiveSession viaShm = decode.openReceive("dead-shm", pool, List.of(new ByteRange(16 * MIB, 16 * MIB)));
        peer.send("SEND tcp 11 " + MIB + " stream " + viaTcp.descriptor().encode());
        peer.send("SEND auto 12 " + MIB + " stream " + viaShm.descriptor().encode());
        peer.await("STREAMING 11");
        peer.await("STREAMING 12");
        KvRegion src = prefill.allocateRegion(16 * MIB);
        peer.send("RECV 13 " + 16 * MIB);
        SendSession tx = prefill.connect(ReceiveDescriptor.parse(peer.await("DESC 13 ").split(" ")[2]));
        CompletableFuture<Void> streaming = CompletableFuture.runAsync(() -> {
            for (long i = 0; ; i++) {
                tx.send(src, (i % 16) * MIB, MIB, (i % 16) * MIB).join();
            }
        });
        org.awaitility.Awaitility.await().atMost(WAIT).until(() -> tx.bytesAcknowledged() > 0);

        peer.process.destroyForcibly(); // kill -9, mid-transfer in both directions
        peer.process.waitFor(10, TimeUnit.SECONDS);

        for (ReceiveSession rx : List.of(viaTcp, viaShm)) {
            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
            assertThat(rx.abortReason()).get().extracting(AbortReason::cause)
                    .isEqualTo(AbortReason.Cause.PEER_LOST);
        }
        assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(tx.abortReason()).get().extracting(AbortReason::cause).isEqualTo(AbortReason.Cause.PEER_LOST);
        assertThat(streaming).failsWithin(WAIT);
        assertThat(Internals.region(src).references()).isZero();
        assertThat(Internals.region(pool).references()).isZero();
        assertThat(decode.stats().liveSessions()).isZero();
        assertThat(prefill.stats().liveSessions()).isZero();
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
        // The survivor carries on: the same pages take a fresh session at once.
        ReceiveSession again = decode.openReceive("after", pool, List.of(new ByteRange(0, 16 * MIB)));
        again.abort("done");
        get(again.released());
        pool.close();
        src.close();
    }

    @Test
    void leaseExpiryAbortsSilentPeer() throws Exception {
        // Short, but not so short that a live peer on a loaded 2-core CI machine misses it before the freeze.
        Peer peer = peer(1000);
        Duration lease = Duration.ofMillis(1000);
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withLease(lease));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withLease(lease));
        KvRegion pool = decode.allocateRegion(4 * MIB);
        ReceiveSession rx = decode.openReceive("silent-in", pool, List.of(new ByteRange(0, 4 * MIB)));
        peer.send("SEND auto 21 " + MIB + " idle " + rx.descriptor().encode());
        assertThat(peer.await("ATTACHED 21")).endsWith("SHM");
        KvRegion src = prefill.allocateRegion(4 * MIB);
        peer.send("RECV 22 " + 4 * MIB);
        SendSession tx = prefill.connect(ReceiveDescriptor.parse(peer.await("DESC 22 ").split(" ")[2]));
        get(tx.send(src, 0, MIB, 0));

        peer.signal("STOP"); // alive, sockets open, but silent: only the lease can tell

        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(rx.abortReason()).get().extracting(AbortReason::cause)
                .isEqualTo(AbortReason.Cause.LEASE_EXPIRED);
        assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(tx.abortReason()).get().extracting(AbortReason::cause)
                .isEqualTo(AbortReason.Cause.LEASE_EXPIRED);
        assertThat(registry.get("ripcord.kv.lease.expiries").tag("agent", "decode").counter().count()).isEqualTo(1);
        assertThat(registry.get("ripcord.kv.lease.expiries").tag("agent", "prefill").counter().count())
                .isEqualTo(1);
        assertThat(Internals.region(pool).references()).isZero();
        assertThat(Internals.region(src).references()).isZero();
        pool.close();
        src.close();
    }

    // ---- a shared-memory writer in another process, inside the fence bracket when the receiver aborts ----------

    @Test
    void aWriterKilledInsideTheFenceBracketLetsTheSessionRelease() throws Exception {
        Peer peer = peer(5000);
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode-killed-writer").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(MIB);
        ReceiveSession rx = decode.openReceive("xp-killed-writer", pool, List.of(new ByteRange(0, MIB)));
        peer.send("BRACKET 1 " + rx.descriptor().encode());
        peer.await("INSIDE 1");

        assertThat(rx.abort("client went away")).isTrue();
        Internals.receive(rx).maybeRelease(); // a recheck while the writer is alive inside the bracket: nothing may be released
        assertThat(rx.released()).isNotDone();
        assertThat(rx.state()).isEqualTo(SessionState.ABORTING);

        peer.signal("KILL"); // mid-copy, as far as the receiver can tell
        assertThat(peer.process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        assertThat(get(rx.released())).as("a dead writer has no mappings: the session drains")
                .isEqualTo(SessionState.ABORTED);
        pool.close();
        get(pool.released());
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
    }

    @Test
    void aStoppedWriterInsideTheFenceBracketIsQuarantinedUntilCloseReleasesIt() throws Exception {
        Peer peer = peer(5000);
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode-stopped-writer").withBackend(Backend.SHM)
                .withLease(Duration.ofMillis(50)).withCloseTimeout(Duration.ofMillis(100)));
        KvRegion pool = decode.allocateRegion(MIB);
        ReceiveSession rx = decode.openReceive("xp-stopped-writer", pool, List.of(new ByteRange(0, MIB)));
        peer.send("BRACKET 2 " + rx.descriptor().encode());
        peer.await("INSIDE 2");
        peer.signal("STOP");

        assertThat(rx.abort("client went away")).isTrue();
        Awaitility.await().atMost(WAIT).until(() -> Internals.agent(decode).drainsQuarantined() == 1);

        assertThat(rx.released()).as("pinned while its writer is alive inside the bracket").isNotDone();
        assertThat(rx.state()).isEqualTo(SessionState.ABORTING);
        assertThat(peer.process.isAlive()).isTrue();

        decode.close(); // the agent unmaps its memory: a late write can only reach the deleted file's pages
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(pool.released()).isDone();
        peer.signal("CONT");
    }

    // ---- a recycled pid: the fence word names a pid that another process has now -------------------------------

    @Test
    void aWriterWhosePidWasRecycledIsNotTakenForTheLiveWriter() throws Exception {
        Process other = new ProcessBuilder("sleep", "60").start(); // holds the dead sender's pid now, as far as we know
        try {
            long otherStart = other.info().startInstant().orElseThrow().toEpochMilli();
            // The sender's HELLO named the process that had this pid before: same pid, started a minute earlier.
            ReceiveSession rx = abortedWithWriterInside("xp-recycled-pid", other.pid(), otherStart - 60_000,
                    (fences, d) -> { });

            assertThat(get(rx.released())).as("the pid names another process now: the sender is gone")
                    .isEqualTo(SessionState.ABORTED);
        } finally {
            other.destroyForcibly().waitFor();
        }
    }

    @Test
    void aWriterWhosePidAndStartMatchTheSenderStaysTheLiveWriter() throws Exception {
        Process sender = new ProcessBuilder("sleep", "60").start(); // stands for the sender, alive inside the bracket
        try {
            long start = sender.info().startInstant().orElseThrow().toEpochMilli();
            FenceTable[] table = new FenceTable[1];
            ReceiveDescriptor[] descriptor = new ReceiveDescriptor[1];
            ReceiveSession rx = abortedWithWriterInside("xp-live-pid", sender.pid(), start, (fences, d) -> {
                table[0] = fences;
                descriptor[0] = d;
            });

            Internals.receive(rx).maybeRelease(); // a recheck while the sender is alive inside the bracket
            assertThat(rx.released()).as("pinned while its writer is alive inside the bracket").isNotDone();
            assertThat(rx.state()).isEqualTo(SessionState.ABORTING);

            table[0].endWrite(descriptor[0].fenceSlot()); // the copy leaves the bracket
            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        } finally {
            sender.destroyForcibly().waitFor();
        }
    }

    /**
     * A shared-memory receive session whose sender (a raw peer saying HELLO as process {@code pid} started at
     * {@code startMillis}) attached, whose fence word then shows a copy by {@code pid} inside the bracket, and
     * which the receiver then aborted. {@code inside} sees the sender's mapping of the fence table while it is open.
     */
    private ReceiveSession abortedWithWriterInside(String requestId, long pid, long startMillis,
                                                   BiConsumer<FenceTable, ReceiveDescriptor> inside)
            throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode-" + requestId).withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(MIB);
        closeLast.add(pool);
        ReceiveSession rx = decode.openReceive(requestId, pool, List.of(new ByteRange(0, MIB)));
        ReceiveDescriptor d = rx.descriptor();
        Path fenceFile = Path.of(d.shmFenceFile());
        FenceTable fences = FenceTable.open(fenceFile.getParent(), d.shmFenceFile(), d.agentIncarnation());
        closeLast.add(fences);
        RawPeer sender = new RawPeer(new Socket(InetAddress.getLoopbackAddress(), decode.listenAddress().getPort()));
        closeLast.add(sender);
        sender.send(new Frames.Hello(99, pid, startMillis, 60_000, HostIdentity.local(), "sender-" + requestId)
                .encode(RawPeer.ALLOC));
        sender.readUntil(FrameType.HELLO, -1);
        sender.send(Frames.attach(RawPeer.ALLOC, d.sessionId(), d.attachToken(), d.epoch(), true));
        sender.readUntil(FrameType.ATTACHED, d.sessionId());
        assertThat(fences.tryBeginWrite(d.fenceSlot(), d.epoch(), pid)).isEqualTo(FenceTable.Begin.WRITING);
        inside.accept(fences, d);

        assertThat(rx.abort("client went away")).isTrue();
        return rx;
    }

    @Test
    void filesOfAKilledProcessAreSweptByTheNextAgentThatStarts() throws Exception {
        Peer peer = peer(5000);
        Path dir = TransferAgentOptions.defaultShmDirectory();
        String name = ShmFiles.fenceFile(dir, peer.pid, 0).getFileName().toString();
        String owned = name.substring(0, name.indexOf("-" + peer.pid + "-") + ("-" + peer.pid + "-").length());
        List<Path> left;
        try (var files = Files.list(dir)) {
            left = files.filter(f -> f.getFileName().toString().startsWith(owned)).toList();
        }
        assertThat(left).as("the child's fence file").isNotEmpty();

        peer.signal("KILL"); // no close: its files stay behind
        assertThat(peer.process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        assertThat(left).allMatch(Files::exists);

        agent(TransferAgentOptions.defaults("sweeper").withBackend(Backend.SHM).withShmDirectory(dir));

        assertThat(left).noneMatch(Files::exists);
    }
}
