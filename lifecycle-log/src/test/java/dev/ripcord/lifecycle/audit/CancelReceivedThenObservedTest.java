package dev.ripcord.lifecycle.audit;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cancel a worker received while the job was live must be observed after it, by sequence order; the histories the
 * bench's {@code drop-cancel} sabotage leaves (received, then the job failed on its own) break it.
 */
class CancelReceivedThenObservedTest {

    private final CancelReceivedThenObserved check = new CancelReceivedThenObserved();

    private static LifecycleEvent received(String id, String state) {
        return LifecycleEvent.of(CANCEL_RECEIVED, id).withCancel(CancelReason.DEADLINE, CancelSource.TOMBSTONE)
                .withDetail(state);
    }

    /** What drop-cancel left in the bench: a tombstone received at admission, never observed; the job failed later. */
    private static void droppedCancel(AuditLogs log, String id) {
        log.gateway(LifecycleEvent.of(ADMITTED, id));
        log.gateway(LifecycleEvent.of(FINISHED, id).withOutcome(LifecycleOutcome.CANCELLED)
                .withCancel(CancelReason.DEADLINE, null));
        log.decode(received(id, "WAITING"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, id).withPages(2));
        log.decode(LifecycleEvent.of(JOB_FINISHED, id).withOutcome(LifecycleOutcome.FAILED)
                .withDetail("ATTACH_TIMEOUT"));
        log.decode(LifecycleEvent.of(PAGES_FREED, id).withPages(2));
    }

    @Test
    void aReceivedCancelThatIsObservedAfterwardsFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-c"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-c").withPages(2));
        log.decode(received("req-c", "RUNNING"));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-c").withCancel(CancelReason.DEADLINE,
                CancelSource.TOMBSTONE).withStep(3));
        log.decode(LifecycleEvent.of(ABORTED, "req-c").withCancel(CancelReason.DEADLINE, CancelSource.TOMBSTONE)
                .withDetail("decode"));
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-c").withPages(2));
        log.gateway(LifecycleEvent.of(FINISHED, "req-c").withOutcome(LifecycleOutcome.CANCELLED));

        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aJobThatEndsJustAsItsCancelArrivesIsNoViolation() {
        AuditLogs log = new AuditLogs();
        // The job's own end won: logged before the receipt, which read the job's state as ended; observed all the same.
        log.gateway(LifecycleEvent.of(ADMITTED, "req-race"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-race").withPages(2));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-race").withOutcome(LifecycleOutcome.COMPLETED));
        log.decode(received("req-race", "DONE"));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-race").withCancel(CancelReason.DEADLINE,
                CancelSource.TOMBSTONE));
        log.gateway(LifecycleEvent.of(FINISHED, "req-race").withOutcome(LifecycleOutcome.COMPLETED));
        // Received after the job had ended, by its state then: nothing to observe.
        log.gateway(LifecycleEvent.of(ADMITTED, "req-late"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-late").withPages(2));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-late").withOutcome(LifecycleOutcome.COMPLETED));
        log.decode(received("req-late", "DONE"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-late").withOutcome(LifecycleOutcome.COMPLETED));
        // A refusal is published outside the journal's lock: its end may precede a receipt that read WAITING.
        log.gateway(LifecycleEvent.of(ADMITTED, "req-refused"));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-refused").withOutcome(LifecycleOutcome.FAILED)
                .withDetail("refused"));
        log.decode(received("req-refused", "WAITING"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-refused").withOutcome(LifecycleOutcome.FAILED));

        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void anObservationLoggedOnlyAfterTheJobEndedOtherwiseIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-after"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-after").withPages(2));
        log.decode(received("req-after", "RUNNING"));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-after").withOutcome(LifecycleOutcome.COMPLETED));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-after").withCancel(CancelReason.DEADLINE,
                CancelSource.TOMBSTONE));
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-after").withPages(2));
        log.gateway(LifecycleEvent.of(FINISHED, "req-after").withOutcome(LifecycleOutcome.COMPLETED));

        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("the job ended COMPLETED", "without it"));
    }

    /**
     * The bench's case: the dropped job failed on its own 30 s after the cancel, so its request's last event sat
     * within the in-flight grace of the range's end. Its evidence is complete (it ended), so it is judged.
     */
    @Test
    void aJobThatEndedIsJudgedEvenWhenItsRequestIsInFlightAtTheEdge() {
        AuditLogs log = new AuditLogs();
        droppedCancel(log, "req-dropped");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-open"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-open").withPages(2));
        log.decode(received("req-open", "RUNNING")); // no end yet, no observation yet: in flight, not judged

        AuditReport report = Auditor.audit(log.events(), List.of(),
                new Auditor.Options(null, null, java.time.Duration.ofMinutes(1)));

        assertThat(report.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).extracting(Violation::requestId)
                .containsExactly("req-dropped");
    }

    @Test
    void aCancelReceivedByALiveJobThatThenEndedOtherwiseIsAViolation() {
        AuditLogs log = new AuditLogs();
        droppedCancel(log, "req-dropped");
        log.completed("req-fine");

        AuditReport report = Auditor.audit(log.events(), List.of(), Checks.WHOLE_LOG);

        assertThat(report.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo("req-dropped");
            assertThat(v.process()).isEqualTo("d1");
            assertThat(v.message()).contains("decode d1 received a cancel", "while the job was WAITING",
                    "did not observe it", "the job ended FAILED");
            assertThat(v.events()).extracting(LifecycleEvent::type).containsExactly(CANCEL_RECEIVED, JOB_FINISHED);
        });
        assertThat(report.passed()).isFalse();
    }

    @Test
    void aLiveJobThatReceivedItsCancelAndNeverEndedIsMissingItsObservation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-deaf"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-deaf").withPages(2));
        log.decode(received("req-deaf", "RUNNING"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-deaf").withOutcome(LifecycleOutcome.CANCELLED));

        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.message()).contains("the job never ended");
        });
    }

    @Test
    void onlyALossAfterTheReceiptMakesItUnverifiable() {
        AuditLogs before = new AuditLogs();
        before.gateway(LifecycleEvent.of(ADMITTED, "req-x"));
        before.decode(LifecycleEvent.of(JOB_ADMITTED, "req-x").withPages(2));
        before.lose("d1", 2); // lost before the receipt: the observation cannot be among them
        before.decode(received("req-x", "RUNNING"));
        before.decode(LifecycleEvent.of(JOB_FINISHED, "req-x").withOutcome(LifecycleOutcome.COMPLETED));
        before.decode(LifecycleEvent.of(PAGES_FREED, "req-x").withPages(2));
        before.gateway(LifecycleEvent.of(FINISHED, "req-x").withOutcome(LifecycleOutcome.COMPLETED));
        AuditReport lostBefore = Auditor.audit(before.events(), List.of(), Checks.WHOLE_LOG);
        assertThat(lostBefore.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).hasSize(1);

        AuditLogs after = new AuditLogs();
        after.gateway(LifecycleEvent.of(ADMITTED, "req-x"));
        after.decode(LifecycleEvent.of(JOB_ADMITTED, "req-x").withPages(2));
        after.decode(received("req-x", "RUNNING"));
        after.lose("d1", 1); // the observation may be the event lost here
        after.decode(LifecycleEvent.of(JOB_FINISHED, "req-x").withOutcome(LifecycleOutcome.COMPLETED));
        after.decode(LifecycleEvent.of(PAGES_FREED, "req-x").withPages(2));
        after.gateway(LifecycleEvent.of(FINISHED, "req-x").withOutcome(LifecycleOutcome.COMPLETED));
        AuditReport lostAfter = Auditor.audit(after.events(), List.of(), Checks.WHOLE_LOG);
        assertThat(lostAfter.violationsOf(Invariant.CANCEL_RECEIVED_THEN_OBSERVED)).isEmpty();
        assertThat(lostAfter.unverifiable()).singleElement().satisfies(v -> {
            assertThat(v.invariant()).isEqualTo(Invariant.CANCEL_RECEIVED_THEN_OBSERVED);
            assertThat(v.message()).contains("unverifiable");
        });
    }

    @Test
    void orderIsTheProcessesSequenceNotItsClock() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-skew"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-skew").withPages(2));
        log.decode(received("req-skew", "RUNNING"));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-skew").withCancel(CancelReason.DEADLINE,
                CancelSource.TOMBSTONE));
        log.decode(LifecycleEvent.of(ABORTED, "req-skew").withCancel(CancelReason.DEADLINE, CancelSource.TOMBSTONE));
        log.gateway(LifecycleEvent.of(FINISHED, "req-skew").withOutcome(LifecycleOutcome.CANCELLED));
        // The clock stepped back between the receipt and the observation: the timestamps disagree with seq.
        List<LifecycleEvent> skewed = new ArrayList<>();
        Instant early = Instant.parse("2026-12-01T11:59:00Z");
        for (LifecycleEvent e : log.events()) {
            boolean later = e.type() == CANCEL_OBSERVED || e.type() == ABORTED;
            skewed.add(later ? e.stamped(e.service(), e.instance(), e.incarnation(), e.seq(), early) : e);
        }

        assertThat(check.check(History.of(skewed, List.of(), Checks.WHOLE_LOG))).isEmpty();
    }
}
