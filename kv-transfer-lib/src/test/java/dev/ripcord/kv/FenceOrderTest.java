package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.session.DefaultReceiveSession;
import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.testing.KvLeakCheck;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A receive session never releases before its fence is closed and its verdict's thread has told the caller,
 * whoever drives the release. Each test runs another thread's step (a lost connection, an ABORT_ACK, a watchdog
 * recheck) exactly between the verdict's locked block and the rest, through {@link DefaultReceiveSession.Interleaving}:
 * the interleaving is forced, not hoped for.
 */
@ExtendWith(KvLeakCheck.class)
class FenceOrderTest extends AgentsPerTest {
    static final int PAGE = 4096;

    private static final AbortReason LOST =
            new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.RECEIVER, "connection lost");

    /** What a still-live shared-memory sender would see the moment the session is released. */
    private static CompletableFuture<List<String>> watchRelease(ReceiveSession rx, FenceTable fences) {
        ReceiveDescriptor d = rx.descriptor();
        long me = ProcessHandle.current().pid();
        return rx.released().thenApply(terminal -> {
            FenceTable.Begin begin = fences.tryBeginWrite(d.fenceSlot(), d.epoch(), me);
            if (begin == FenceTable.Begin.WRITING) {
                fences.endWrite(d.fenceSlot());
            }
            return List.of("a sender's write at release: " + begin,
                    "completion done at release: " + rx.completion().isDone());
        });
    }

    @Test
    void lostConnectionBetweenAbortAndFenceCannotReleaseUnfenced() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-race", pool, List.of(new ByteRange(0, 4 * PAGE)));
        ReceiveDescriptor d = rx.descriptor();
        try (FenceTable fences = FenceTable.open(Path.of(d.shmFenceFile()).getParent(), d.shmFenceFile(), d.agentIncarnation())) {
            CompletableFuture<List<String>> seen = watchRelease(rx, fences);
            Internals.receive(rx).interleave((step, s) -> {
                if (step == DefaultReceiveSession.Interleaving.Step.ACCEPTANCE_STOPPED) {
                    s.onConnectionLost(null, LOST); // its own abort returns false; it still tries to release
                }
            });

            assertThat(rx.abort("client went away")).isTrue();

            assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
            assertThat(get(seen)).containsExactly("a sender's write at release: FENCED",
                    "completion done at release: true");
            assertThat(rx.abortReason()).get().extracting(AbortReason::cause).isEqualTo(AbortReason.Cause.REQUESTED);
        }
        pool.close();
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
    }

    @Test
    void slotCannotBeReopenedBeforeTheAbortHasFencedAndFailedTheCompletion() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-first", pool, List.of(new ByteRange(0, 4 * PAGE)));
        AtomicReference<ReceiveSession> next = new AtomicReference<>();
        Internals.receive(rx).interleave((step, s) -> {
            if (step == DefaultReceiveSession.Interleaving.Step.ACCEPTANCE_STOPPED) {
                Internals.receive(s).maybeRelease(); // an ABORT_ACK or a watchdog recheck on another thread
                // The next request opens a session now: it must not be handed the slot of one still unfenced.
                next.set(decode.openReceive("req-next", pool, List.of(new ByteRange(4 * PAGE, 4 * PAGE))));
            }
        });

        assertThat(rx.abort("client went away")).isTrue();

        assertThat(rx.completion()).isCompletedExceptionally();
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        ReceiveDescriptor nd = next.get().descriptor();
        assertThat(nd.fenceSlot()).as("the next session's slot").isNotEqualTo(rx.descriptor().fenceSlot());
        try (FenceTable fences = FenceTable.open(Path.of(nd.shmFenceFile()).getParent(), nd.shmFenceFile(), nd.agentIncarnation())) {
            long me = ProcessHandle.current().pid();
            assertThat(fences.tryBeginWrite(nd.fenceSlot(), nd.epoch(), me)).isEqualTo(FenceTable.Begin.WRITING);
            fences.endWrite(nd.fenceSlot());
            assertThat(fences.tryBeginWrite(rx.descriptor().fenceSlot(), rx.descriptor().epoch(), me))
                    .isEqualTo(FenceTable.Begin.FENCED);
        }
        assertThat(next.get().abort("done")).isTrue();
        assertThat(get(next.get().released())).isEqualTo(SessionState.ABORTED);
        pool.close();
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
    }

    @Test
    void recheckBetweenVerdictAndFenceCannotReleaseUnfenced() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        KvRegion src = prefill.allocateRegion(4 * PAGE);
        ReceiveSession rx = decode.openReceive("req-done", pool, List.of(new ByteRange(0, 4 * PAGE)));
        ReceiveDescriptor d = rx.descriptor();
        try (FenceTable fences = FenceTable.open(Path.of(d.shmFenceFile()).getParent(), d.shmFenceFile(), d.agentIncarnation())) {
            CompletableFuture<List<String>> seen = watchRelease(rx, fences);
            Internals.receive(rx).interleave((step, s) -> {
                if (step == DefaultReceiveSession.Interleaving.Step.VERDICT_REACHED) {
                    Internals.receive(s).maybeRelease(); // an ABORT_ACK or a watchdog recheck on another thread
                }
            });
            SendSession tx = prefill.connect(d);
            assertThat(tx.backend()).isEqualTo(Backend.SHM);
            tx.send(src, 0, 4 * PAGE, 0);
            tx.complete(new byte[] {42});

            assertThat(get(rx.completion())).containsExactly(42);
            assertThat(get(rx.released())).isEqualTo(SessionState.COMPLETED);
            assertThat(get(seen)).containsExactly("a sender's write at release: FENCED",
                    "completion done at release: true");
            get(tx.released());
        }
        pool.close();
        src.close();
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
    }
}
