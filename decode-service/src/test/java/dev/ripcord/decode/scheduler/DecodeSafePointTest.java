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
 * Safe points, decode side: a cancel observed while a decode step computes requests the engine's stop on the
 * sequence; a step whose every sequence is cancelled stops at the next layer boundary (none advances, no token is
 * emitted, they leave inside that step), and one with others still wanted goes on for them, the cancelled one left
 * out from its next attention item on and leaving inside that step, with no token from it. The cancel is delivered at an exact layer boundary of the step through the engine's
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

    /** Admits requests at both workers and steps until decode has emitted the first few tokens of each. */
    private List<TwoWorkers.Request> decoding(String... ids) {
        List<TwoWorkers.Request> requests = java.util.Arrays.stream(ids).map(id -> w.reserve(id, 40, MAX_TOKENS))
                .toList();
        requests.forEach(TwoWorkers.Request::startPrefill);
        w.runUntil("tokens of " + List.of(ids), () -> requests.stream().allMatch(r -> tokens(r) >= 3));
        return requests;
    }

    private static final int MAX_TOKENS = 400;

    private static long tokens(TwoWorkers.Request r) {
        return r.decodeEvents.stream().filter(DecodeEvent.Token.class::isInstance).count();
    }

    private String detail(String id, String event) {
        return TwoWorkers.entries(w.decodeJournal, id).stream().filter(e -> e.event().equals(event))
                .map(JournalEntry::detail).findFirst().orElseThrow(() -> new AssertionError(w.decodeEvents(id)));
    }

    @Test
    void aStepThatFailsEndsEverySequenceInItFailedWithAnErrorTheClientSeesAndTheWorkerGoesOn() {
        List<TwoWorkers.Request> failing = decoding("decode-step-fails-1", "decode-step-fails-2");
        AtomicBoolean once = new AtomicBoolean();
        w.decodeEngine.onLayerBoundary(layer -> {
            if (layer == 1 && once.compareAndSet(false, true)) {
                throw new IllegalStateException("injected engine failure");
            }
        });
        w.runUntil("failed", () -> failing.stream().allMatch(r -> r.decodeJob.state().isTerminal() && r.decodeEnded));
        w.decodeEngine.onLayerBoundary(null);

        for (TwoWorkers.Request r : failing) {
            assertThat(r.decodeJob.state()).isEqualTo(JobState.FAILED);
            assertThat(r.decodeEvents.getLast()).isInstanceOfSatisfying(dev.ripcord.protocol.Failed.class,
                    f -> assertThat(f.code()).isEqualTo(dev.ripcord.protocol.Failed.ENGINE_FAILED));
        }
        // Nothing of them stays in the batch: a later request decodes to its end.
        TwoWorkers.Request after = w.reserve("decode-step-fails-after", 40, 8);
        after.startPrefill();
        w.runUntil("the next request", () -> after.decodeJob.state().isTerminal() && after.decodeEnded);
        assertThat(after.decodeJob.state()).isEqualTo(JobState.DONE);
        assertThat(tokens(after)).isEqualTo(8);
        w.runUntilQuiet();
    }

    @Test
    void aStepWhoseOnlySequenceIsCancelledStopsAtTheNextLayerBoundaryAndEmitsNothing() {
        TwoWorkers.Request r = decoding("decode-safepoint-alone").getFirst();
        int layers = w.decodeEngine.config().layers();
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
        String stopped = detail(r.id, "STOPPED");
        assertThat(stopped).as("stopped inside the step it was observed in, at the boundary where it was observed")
                .endsWith(" tokens layer=1/" + layers + " step=" + observed);
        assertThat(tokens(r)).as("every token generated before the stop went out, none of the stopped step's")
                .isEqualTo(Long.parseLong(stopped.split(" ")[0])).isEqualTo(r.decodeJob.generated);
        assertThat(r.decodeEvents).last().isEqualTo(new Cancelled(CancelReason.CLIENT_DISCONNECT,
                CancelSource.IN_BAND));
        assertThat(w.decodeEvents(r.id)).endsWith("CANCEL_OBSERVED", "STOPPED", "FREED");
        assertThat(w.decodeEngine.stats().decodeStops()).isEqualTo(1);
        assertThat(w.decode.aborts()).isEqualTo(1);
        assertThat(w.decodeEngine.pagePool().pagesLive()).isZero();
    }

    @Test
    void aStepWithAnotherSequenceStillWantedGoesOnForItAndTheCancelledOneLeavesInsideTheStepWithNoTokenFromIt() {
        List<TwoWorkers.Request> both = decoding("decode-safepoint-cancelled", "decode-safepoint-kept");
        TwoWorkers.Request cancelled = both.get(0);
        TwoWorkers.Request kept = both.get(1);
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
        int layers = w.decodeEngine.config().layers();
        String stopped = detail(cancelled.id, "STOPPED");
        assertThat(stopped).as("left out from the layer where it was observed, inside the step it was observed in")
                .endsWith(" tokens layer=1/" + layers + " step=" + observed);
        assertThat(tokens(cancelled)).as("every token generated before the stop went out, none of the stopped step's")
                .isEqualTo(Long.parseLong(stopped.split(" ")[0])).isEqualTo(cancelled.decodeJob.generated);
        assertThat(cancelled.decodeEvents).last().isEqualTo(new Cancelled(CancelReason.CLIENT_DISCONNECT,
                CancelSource.IN_BAND));
        assertThat(kept.decodeJob.state()).isEqualTo(JobState.DONE);
        assertThat(cancelled.decodeJob.state()).isEqualTo(JobState.CANCELLED);
        assertThat(tokens(kept)).as("the kept one got every token").isEqualTo(MAX_TOKENS);
        assertThat(w.decodeEngine.stats().decodeStops()).isZero();
        assertThat(w.decode.aborts()).isEqualTo(1);
        assertThat(List.of(w.decodeEngine.pagePool().pagesLive(), w.prefillEngine.pagePool().pagesLive()))
                .containsOnly(0);
    }
}
