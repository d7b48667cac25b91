package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One test per memory-safety rule of a transfer (abort, drain, then release, each exactly once: docs/kv-transfer.md),
 * on both backends where the rule applies to both.
 */
@ExtendWith(KvLeakCheck.class)
class SafetyRulesTest extends AgentsPerTest {
    static final int PAGE = 4096;

    // ---- a receiver region is never released while a write into it may still land ---------------------------

    @Test
    void receiverRegionNotReleasedWhileWriteMayLand() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-inflight", pool, List.of(new ByteRange(0, 4 * PAGE)));
        ReceiveDescriptor d = rx.descriptor();
        List<String> events = new CopyOnWriteArrayList<>();
        rx.released().thenRun(() -> events.add("session released"));
        pool.released().thenRun(() -> events.add("region released"));

        // A sender's copy is inside the fence bracket (we play that sender, pausing mid-copy).
        try (FenceTable fences = FenceTable.open(decode.options().shmDirectory(), d.shmFenceFile(), d.agentIncarnation())) {
            long me = ProcessHandle.current().pid();
            assertThat(fences.tryBeginWrite(d.fenceSlot(), d.epoch(), me)).isEqualTo(FenceTable.Begin.WRITING);

            assertThat(rx.abort("client went away")).isTrue();
            pool.close();

            assertThat(rx.state()).isEqualTo(SessionState.ABORTING);
            assertThat(rx.completion()).isCompletedExceptionally();
            assertThat(fences.tryBeginWrite(d.fenceSlot(), d.epoch(), me)).as("no new write may start")
                    .isNotEqualTo(FenceTable.Begin.WRITING);
            assertThat(fences.writer(d.fenceSlot())).as("the fence names who is still writing").isEqualTo(me);
            assertThat(rx.released()).isNotDone();
            assertThat(pool.released()).isNotDone();
            assertThat(events).isEmpty();

            events.add("writer left");
            fences.endWrite(d.fenceSlot());
            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
            get(pool.released());
        }
        assertThat(events).hasSize(3).first().isEqualTo("writer left");
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
    }

    @Test
    void lateTcpBytesAfterAbortNeverLand() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.TCP));
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        Patterns.poison(pool.segment(), 0, pool.byteSize());
        ReceiveSession rx = decode.openReceive("req-late", pool, List.of(new ByteRange(PAGE, 2 * PAGE)));
        long sid = rx.sessionId();
        byte[] payload = new byte[3 * PAGE];
        MemorySegment p = MemorySegment.ofArray(payload);
        Patterns.fill(p, 0, 2 * PAGE, 5, 0);
        Patterns.fill(p, 2 * PAGE, PAGE, 6, 0);

        try (RawPeer sender = new RawPeer(new Socket(InetAddress.getLoopbackAddress(),
                decode.listenAddress().getPort()))) {
            sender.send(RawPeer.hello(99, "fake-prefill").encode(RawPeer.ALLOC));
            sender.readUntil(FrameType.HELLO, -1);
            sender.send(Frames.attach(RawPeer.ALLOC, sid, rx.descriptor().attachToken() ^ 1, 0, false));
            sender.readUntil(FrameType.ABORT, sid); // a guessed session id is not enough
            sender.send(Frames.attach(RawPeer.ALLOC, sid, rx.descriptor().attachToken(), 0, false));
            sender.readUntil(FrameType.ATTACHED, sid);
            // One write of two pages; only the first page's bytes arrive before the abort.
            sender.send(Frames.dataHeader(RawPeer.ALLOC, sid, 1, 0, 2 * PAGE, true));
            sender.sendRaw(payload, 0, PAGE);
            await().atMost(WAIT).until(() -> rx.bytesReceived() == PAGE);

            assertThat(rx.abort("client went away")).isTrue();
            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);

            // The sender, not yet aware, finishes the write and starts another: all of it must be dropped.
            sender.sendRaw(payload, PAGE, PAGE);
            sender.send(Frames.dataHeader(RawPeer.ALLOC, sid, 2, PAGE, PAGE, true));
            sender.sendRaw(payload, 2 * PAGE, PAGE);
            // Sync point: the reply to an ATTACH sent after those bytes proves they were processed.
            sender.send(Frames.attach(RawPeer.ALLOC, 4242, 0, 0, false));
            sender.readUntil(FrameType.ABORT, 4242);
        }
        assertThat(Patterns.firstMismatch(pool.segment(), PAGE, PAGE, 5, 0)).isEqualTo(-1);
        assertThat(Patterns.firstNonPoison(pool.segment(), 2 * PAGE, 2 * PAGE)).as("late bytes landed")
                .isEqualTo(-1);
        assertThat(Patterns.firstNonPoison(pool.segment(), 0, PAGE)).isEqualTo(-1);
        pool.close();
    }

    // ---- a sender never frees source memory while a write reading it is in flight -----------------------------

    @Test
    void senderNeverFreesSourceWhileWriteInFlight() throws Exception {
        // The receiver never reads. Once the sender's outbound buffer is over its high-water mark (several pieces
        // the kernel would not take), those pieces stay in flight, reading the source segment, until the
        // connection dies: writability only returns below the low-water mark, which needs a reading peer.
        long size = 64L << 20;
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.TCP)
                .withCloseTimeout(Duration.ofSeconds(2)));
        KvRegion src = prefill.allocateRegion(size);
        List<String> events = new CopyOnWriteArrayList<>();

        try (ServerSocket server = new ServerSocket()) {
            server.setReceiveBufferSize(4096); // inherited by the accepted socket; no autotuning
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            ReceiveDescriptor d = new ReceiveDescriptor("req-pin", "fake-decode", 77, "127.0.0.1",
                    server.getLocalPort(), null, null, null, -1, 0, 7, 99, 1, List.of(new ByteRange(0, size)), size);
            SendSession tx = prefill.connect(d);
            tx.released().thenRun(() -> events.add("session released"));
            src.released().thenRun(() -> events.add("region released"));
            try (RawPeer receiver = new RawPeer(server.accept())) {
                receiver.readUntil(FrameType.HELLO, -1);
                receiver.send(RawPeer.hello(77, "fake-decode").encode(RawPeer.ALLOC));
                receiver.readUntil(FrameType.ATTACH, 7);
                receiver.send(Frames.attached(RawPeer.ALLOC, 7));

                CompletableFuture<Void> write = tx.send(src, 0, size, 0);
                await().atMost(WAIT).until(() -> Internals.send(tx).transportBackedUp());

                assertThat(tx.abort("client went away")).isTrue();
                assertThat(write).isCompletedExceptionally();
                src.close();
                assertThat(tx.state()).isEqualTo(SessionState.ABORTING);
                assertThat(tx.released()).isNotDone();
                assertThat(src.released()).isNotDone();
                assertThat(Internals.region(src).references()).isPositive();
                events.add("transport let go");
            } // the receiver goes away: the stuck writes fail, and only now may the source be freed
            assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
            get(src.released());
        }
        assertThat(events).hasSize(3).first().isEqualTo("transport let go");
    }

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void sourceRegionCloseWaitsForUnfinishedSends(Backend backend) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(backend));
        KvRegion pool = decode.allocateRegion(16 * PAGE);
        KvRegion src = prefill.allocateRegion(16 * PAGE);
        ReceiveSession rx = decode.openReceive("req-src", pool, List.of(new ByteRange(0, 16 * PAGE)));
        SendSession tx = prefill.connect(rx.descriptor());
        get(tx.send(src, 0, 16 * PAGE, 0));
        src.close();
        assertThatThrownBy(() -> tx.send(src, 0, PAGE, 0)).isInstanceOf(IllegalStateException.class);
        get(tx.complete(new byte[0]));
        get(src.released());
        pool.close();
        get(pool.released());
    }

    // ---- abort is idempotent and may come from either side, at any state, any number of times -----------------

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void abortIsIdempotentFromEitherSide(Backend backend) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(backend));
        KvRegion pool = decode.allocateRegion(64 * PAGE);
        KvRegion src = prefill.allocateRegion(64 * PAGE);
        int rounds = 40;
        for (int round = 0; round < rounds; round++) {
            AtomicInteger onAborted = new AtomicInteger();
            ReceiveSession rx = decode.openReceive("req-" + round, pool, List.of(new ByteRange(0, 64 * PAGE)),
                    new ReceiveListener() {
                        @Override
                        public void onAborted(ReceiveSession session, AbortReason reason) {
                            onAborted.incrementAndGet();
                        }
                    });
            SendSession tx = prefill.connect(rx.descriptor());
            tx.send(src, 0, 32 * PAGE, 0);
            AtomicInteger receiverWins = new AtomicInteger();
            AtomicInteger senderWins = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                boolean receiverSide = (t + round) % 2 == 0;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    for (int i = 0; i < 20; i++) {
                        if (receiverSide ? rx.abort("r" + i) : tx.abort("s" + i)) {
                            (receiverSide ? receiverWins : senderWins).incrementAndGet();
                        }
                    }
                }));
            }
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
            assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
            assertThat(receiverWins.get()).isLessThanOrEqualTo(1);
            assertThat(senderWins.get()).isLessThanOrEqualTo(1);
            assertThat(receiverWins.get() + senderWins.get()).isPositive();
            assertThat(onAborted).hasValue(1);
            assertThat(rx.abort("again")).isFalse();
            assertThat(tx.abort("again")).isFalse();
            assertThat(rx.state()).isEqualTo(SessionState.RELEASED);
            assertThat(tx.state()).isEqualTo(SessionState.RELEASED);
        }
        assertThat(registry.get("ripcord.kv.sessions").tags("agent", "decode", "side", "receiver", "outcome",
                "aborted").counter().count()).isEqualTo(rounds);
        assertThat(registry.get("ripcord.kv.sessions").tags("agent", "prefill", "side", "sender", "outcome",
                "aborted").counter().count()).isEqualTo(rounds);
        assertThat(registry.get("ripcord.kv.abort.latency").tags("agent", "decode", "side", "receiver").timer()
                .count()).isEqualTo(rounds);
        pool.close();
        src.close();
    }

    enum Moment { BEFORE_CONNECT, AFTER_CONNECT, MID_TRANSFER, AFTER_COMPLETE_CALL, AFTER_COMPLETED }

    @ParameterizedTest
    @EnumSource(Moment.class)
    void abortAtEveryMomentFromEitherSideEndsBothSidesReleased(Moment moment) throws Exception {
        for (Backend backend : List.of(Backend.TCP, Backend.SHM)) {
            for (Side side : Side.values()) {
                TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
                TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(backend));
                KvRegion pool = decode.allocateRegion(8 * PAGE);
                KvRegion src = prefill.allocateRegion(8 * PAGE);
                ReceiveSession rx = decode.openReceive("req-" + moment, pool, List.of(new ByteRange(0, 8 * PAGE)));
                boolean aborted = moment == Moment.BEFORE_CONNECT && rx.abort("early"); // no sender yet
                SendSession tx = prefill.connect(rx.descriptor());
                if (moment != Moment.BEFORE_CONNECT) {
                    if (moment != Moment.AFTER_CONNECT) {
                        get(tx.send(src, 0, 4 * PAGE, 0));
                    }
                    if (moment == Moment.AFTER_COMPLETE_CALL || moment == Moment.AFTER_COMPLETED) {
                        tx.complete(new byte[] {1});
                    }
                    if (moment == Moment.AFTER_COMPLETED) {
                        get(rx.released());
                        get(tx.released());
                    }
                    aborted = side == Side.RECEIVER ? rx.abort("now") : tx.abort("now");
                }
                SessionState rxEnd = get(rx.released());
                SessionState txEnd = get(tx.released());
                assertThat(txEnd).as("%s %s %s: both sides agree", backend, side, moment).isEqualTo(rxEnd);
                switch (moment) {
                    case AFTER_COMPLETED -> {
                        assertThat(aborted).isFalse();
                        assertThat(rxEnd).isEqualTo(SessionState.COMPLETED);
                    }
                    case AFTER_COMPLETE_CALL -> assertThat(aborted || rxEnd == SessionState.COMPLETED).isTrue();
                    default -> {
                        assertThat(aborted).isTrue();
                        assertThat(rxEnd).isEqualTo(SessionState.ABORTED);
                    }
                }
                if (rxEnd == SessionState.ABORTED) {
                    assertThatThrownBy(() -> rx.completion().join()).hasCauseInstanceOf(TransferAbortedException.class);
                    assertThatThrownBy(() -> tx.completion().join()).hasCauseInstanceOf(TransferAbortedException.class);
                    assertThat(TransferAbortedException.reasonOf(rx.completion())).isPresent();
                }
                prefill.close();
                decode.close();
                assertThat(decode.stats().liveSessions()).isZero();
                assertThat(prefill.stats().liveSessions()).isZero();
            }
        }
    }

    // ---- release happens exactly once ---------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void releaseHappensExactlyOnceWhenCompleteRacesAbortsFromBothSides(Backend backend) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(backend));
        KvRegion pool = decode.allocateRegion(16 * PAGE);
        KvRegion src = prefill.allocateRegion(16 * PAGE);
        Patterns.fill(src.segment(), 0, 16 * PAGE, 11, 0);
        int rounds = 150;
        int completed = 0;
        for (int round = 0; round < rounds; round++) {
            ReceiveSession rx = decode.openReceive("req-" + round, pool, List.of(new ByteRange(0, 16 * PAGE)));
            SendSession tx = prefill.connect(rx.descriptor());
            tx.send(src, 0, 16 * PAGE, 0);
            AtomicInteger releases = new AtomicInteger();
            rx.released().thenRun(releases::incrementAndGet);
            tx.released().thenRun(releases::incrementAndGet);
            CountDownLatch go = new CountDownLatch(1);
            int r = round;
            Thread a = Thread.ofPlatform().start(() -> { awaitLatch(go); tx.complete(new byte[] {(byte) r}); });
            Thread b = Thread.ofPlatform().start(() -> { awaitLatch(go); if (r % 3 != 0) rx.abort("race"); });
            Thread c = Thread.ofPlatform().start(() -> { awaitLatch(go); if (r % 3 == 0) tx.abort("race"); });
            go.countDown();
            a.join();
            b.join();
            c.join();
            SessionState rxEnd = get(rx.released());
            assertThat(get(tx.released())).isEqualTo(rxEnd);
            if (rxEnd == SessionState.COMPLETED) {
                completed++;
                assertThat(rx.completion().join()).containsExactly((byte) r);
                assertThat(Patterns.firstMismatch(pool.segment(), 0, 16 * PAGE, 11, 0)).isEqualTo(-1);
            }
            await().atMost(WAIT).until(() -> releases.get() == 2); // callbacks may trail get()
            assertThat(Internals.region(pool).references()).isZero();
            assertThat(Internals.region(src).references()).isZero();
        }
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
        double rxTotal = registry.get("ripcord.kv.sessions").tags("agent", "decode", "side", "receiver").counters()
                .stream().mapToDouble(cnt -> cnt.count()).sum();
        assertThat(rxTotal).isEqualTo(rounds);
        assertThat(decode.stats()).isEqualTo(new TransferStats(1, 16 * PAGE, 0, 0, decode.stats().connections()));
        System.out.printf("%s: %d of %d raced sessions completed%n", backend, completed, rounds);
        pool.close();
        src.close();
    }

    private static void awaitLatch(CountDownLatch l) {
        try {
            l.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- other guards -------------------------------------------------------------------------------------------

    @Test
    void orphanedReceiveAbortsAfterAttachTimeout() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode")
                .withAttachTimeout(Duration.ofMillis(100)));
        KvRegion pool = decode.allocateRegion(PAGE);
        ReceiveSession rx = decode.openReceive("req-orphan", pool, List.of(new ByteRange(0, PAGE)));
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(rx.abortReason()).get().extracting(AbortReason::cause)
                .isEqualTo(AbortReason.Cause.ATTACH_TIMEOUT);
        pool.close();
    }

    @Test
    void aSenderThatAttachesAfterTheReceiverCancelledAndReleasedLearnsTheCancel() throws Exception {
        // Decode cancels before prefill attached: no connection to send the ABORT on, and nothing to drain, so the
        // session releases at once. Prefill's late ATTACH must still carry the typed cancel back (the hammer caught
        // prefill ending FAILED on "no live session" instead of CANCELLED by UPSTREAM).
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill"));
        KvRegion pool = decode.allocateRegion(PAGE);
        KvRegion source = prefill.allocateRegion(PAGE);
        ReceiveSession rx = decode.openReceive("req-cancelled-early", pool, List.of(new ByteRange(0, PAGE)));
        assertThat(rx.abort(CancelReason.CLIENT_STALLED, CancelSource.IN_BAND)).isTrue();
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);

        SendSession tx = prefill.connect(rx.descriptor());
        CompletableFuture<Void> sent = tx.send(source, 0, PAGE, 0);

        assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
        AbortReason why = tx.abortReason().orElseThrow();
        assertThat(why.cause()).isEqualTo(AbortReason.Cause.REQUESTED);
        assertThat(why.origin()).isEqualTo(Side.RECEIVER);
        assertThat(why.cancellation()).contains(new AbortReason.Cancel(CancelReason.CLIENT_STALLED,
                CancelSource.IN_BAND));
        assertThat(sent).failsWithin(Duration.ofSeconds(10)).withThrowableThat()
                .havingRootCause().isInstanceOf(TransferAbortedException.class);
        source.close();
        pool.close();
    }

    @Test
    void descriptorOfAReleasedSessionIsRefused() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.TCP));
        KvRegion pool = decode.allocateRegion(PAGE);
        ReceiveSession rx = decode.openReceive("req-stale", pool, List.of(new ByteRange(0, PAGE)));
        rx.abort("gone");
        get(rx.released());
        SendSession tx = prefill.connect(rx.descriptor());
        assertThat(get(tx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(tx.abortReason()).get().extracting(AbortReason::cause)
                .isEqualTo(AbortReason.Cause.UNKNOWN_SESSION);
        SendSession again = prefill.connect(
                new ReceiveDescriptor("req-x", "decode", 1, "127.0.0.1", decode.listenAddress().getPort(), null,
                        null, null, -1, 0, 999_999, 5, 1, List.of(new ByteRange(0, PAGE)), PAGE));
        assertThat(get(again.released())).isEqualTo(SessionState.ABORTED);
        assertThat(again.abortReason()).get().extracting(AbortReason::cause)
                .isEqualTo(AbortReason.Cause.PEER_UNREACHABLE); // incarnation 1 is not the running agent
        pool.close();
    }

    @Test
    void misuseIsRejectedUpFront() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        assertThatThrownBy(() -> decode.openReceive("r", pool, List.of(new ByteRange(3 * PAGE, 2 * PAGE))))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> decode.openReceive("r", pool, List.of(new ByteRange(0, 2 * PAGE),
                new ByteRange(PAGE, PAGE)))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("overlap");
        try (Arena confined = Arena.ofConfined()) {
            assertThatThrownBy(() -> decode.registerRegion(confined.allocate(PAGE)))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        ReceiveSession rx = decode.openReceive("r", pool, List.of(new ByteRange(0, PAGE)));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill"));
        KvRegion src = prefill.allocateRegion(4 * PAGE);
        SendSession tx = prefill.connect(rx.descriptor());
        assertThatThrownBy(() -> prefill.connect(rx.descriptor())).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> tx.send(src, 0, 2 * PAGE, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> tx.send(Arena.global().allocate(PAGE), 0))
                .isInstanceOf(IllegalArgumentException.class);
        tx.abort("done");
        get(rx.released());
        pool.close();
        src.close();
    }

    @Test
    void closingAnAgentAbortsItsSessionsAndRemovesItsFiles() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill"));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        KvRegion src = prefill.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-close", pool, List.of(new ByteRange(0, 8 * PAGE)));
        Path regionFile = Path.of(rx.descriptor().shmRegionFile());
        Path fenceFile = Path.of(rx.descriptor().shmFenceFile());
        SendSession tx = prefill.connect(rx.descriptor());
        get(tx.send(src, 0, PAGE, 0));
        prefill.close();
        assertThat(tx.state()).isEqualTo(SessionState.RELEASED);
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(rx.abortReason()).get().extracting(AbortReason::cause)
                .isIn(AbortReason.Cause.AGENT_CLOSED, AbortReason.Cause.PEER_LOST);
        assertThat(Files.exists(regionFile)).isTrue();
        decode.close();
        assertThat(Files.exists(regionFile)).isFalse();
        assertThat(Files.exists(fenceFile)).isFalse();
        assertThat(pool.released()).isDone();
        assertThat(src.released()).isDone();
        assertThatThrownBy(() -> pool.segment().get(ValueLayout.JAVA_BYTE, 0))
                .isInstanceOf(IllegalStateException.class);
    }
}
