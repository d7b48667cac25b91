package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.worker.job.JobState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue #14, decode side: a cancel observed while a decode step computes requests the engine's stop on the
 * sequence; a step whose every sequence is cancelled stops at the next layer boundary (none advances, no token is
 * emitted, they leave inside that step), and one with others still wanted completes for all, the cancelled one leaving
 * at the next step. The cancel is delivered at an exact layer boundary of the step through the engine's
 * {@code onLayerBoundary} hook, on the loop thread, as a Netty thread would deliver it at that moment.
 */
@ExtendWith(KvLeakCheck.class)
class DecodeSafePointTest {

    private TwoWorkers w;

    @BeforeEach
    void start() {
        w = new TwoWorkers();
    }

    @AfterEach
    void stop() {
        w.decodeEngine.onLayerBoundary(null);
        w.close();
    }

    /** Admits a request at both workers and steps until decode has emitted its first few tokens. */
    private TwoWorkers.Request decoding(String id) {
        TwoWorkers.Request r = w.reserve(id, 40, 200);
        r.startPrefill();
        w.runUntil("tokens of " + id, () -> r.decodeEvents.stream().filter(DecodeEvent.Token.class::isInstance)
                .count() >= 3);
        return r;
    }

    private String detail(String id, String event) {
        return TwoWorkers.entries(w.decodeJournal, id).stream().filter(e -> e.event().equals(event))
                .map(JournalEntry::detail).findFirst().orElseThrow(() -> new AssertionError(w.decodeEvents(id)));
    }

    @Test
    void aStepWhoseOnlySequenceIsCancelledStopsAtTheNextLayerBoundaryAndEmitsNothing() {
        TwoWorkers.Request r = decoding("decode-safepoint-alone");
        int layers = w.decodeEngine.config().layers();
        int generatedBefore = r.decodeJob.generated;
        AtomicBoolean once = new AtomicBoolean();
        w.decodeEngine.onLayerBoundary(layer -> {
            if (layer == 1 && once.compareAndSet(false, true)) {
                w.decodeRegistry.cancel(r.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
            }
        });
        w.runUntil("stopped", () -> r.decodeJob.state().isTerminal());
        w.decodeEngine.onLayerBoundary(null);
        w.runUntilQuiet();

        assertThat(r.decodeJob.state()).isEqualTo(JobState.CANCELLED);
        long observed = CancelScenario.step(TwoWorkers.entries(w.decodeJournal, r.id).stream()
                .filter(e -> e.event().equals("CANCEL_OBSERVED")).findFirst().orElseThrow());
        assertThat(detail(r.id, "STOPPED")).as("stopped inside the step it was observed in")
                .isEqualTo(generatedBefore + " tokens layer=1/" + layers + " step=" + observed);
        assertThat(r.decodeEvents.stream().filter(DecodeEvent.Token.class::isInstance).count())
                .as("the stopped step emitted no token").isEqualTo(generatedBefore);
        assertThat(r.decodeEvents).last().isEqualTo(new Cancelled(CancelReason.CLIENT_DISCONNECT,
                CancelSource.IN_BAND));
        assertThat(w.decodeEvents(r.id)).endsWith("CANCEL_OBSERVED", "STOPPED", "FREED");
        assertThat(w.decodeEngine.stats().decodeStops()).isEqualTo(1);
        assertThat(w.decode.aborts()).isEqualTo(1);
        assertThat(w.decodeEngine.pagePool().pagesLive()).isZero();
    }

    @Test
    void aStepWithAnotherSequenceStillWantedCompletesAndTheCancelledOneLeavesAtTheNextStep() {
        TwoWorkers.Request cancelled = decoding("decode-safepoint-cancelled");
        TwoWorkers.Request kept = decoding("decode-safepoint-kept");
        AtomicBoolean once = new AtomicBoolean();
        w.decodeEngine.onLayerBoundary(layer -> {
            if (layer == 1 && once.compareAndSet(false, true)) {
                w.decodeRegistry.cancel(cancelled.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
            }
        });
        w.runUntil("the cancelled one stopped", () -> cancelled.decodeJob.state().isTerminal());
        w.decodeEngine.onLayerBoundary(null);
        w.runUntil("the kept one finished", () -> kept.decodeJob.state().isTerminal());
        w.runUntilQuiet();

        long observed = CancelScenario.step(TwoWorkers.entries(w.decodeJournal, cancelled.id).stream()
                .filter(e -> e.event().equals("CANCEL_OBSERVED")).findFirst().orElseThrow());
        assertThat(detail(cancelled.id, "STOPPED")).as("left at the next step, no layer: the step completed")
                .doesNotContain("layer=").endsWith("step=" + (observed + 1));
        assertThat(kept.decodeJob.state()).isEqualTo(JobState.DONE);
        assertThat(kept.decodeEvents.stream().filter(DecodeEvent.Token.class::isInstance).count())
                .as("the kept one got every token").isEqualTo(200);
        assertThat(w.decodeEngine.stats().decodeStops()).isZero();
        assertThat(w.decode.aborts()).isEqualTo(1);
        assertThat(List.of(w.decodeEngine.pagePool().pagesLive(), w.prefillEngine.pagePool().pagesLive()))
                .containsOnly(0);
    }
}
