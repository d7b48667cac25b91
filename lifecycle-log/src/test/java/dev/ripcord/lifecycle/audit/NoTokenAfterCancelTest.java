package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class NoTokenAfterCancelTest {

    private final NoTokenAfterCancel check = new NoTokenAfterCancel();

    @Test
    void leavingTheBatchAtTheNextStepFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-d").withStep(5));
        log.decode(LifecycleEvent.of(LEFT_BATCH, "req-d").withStep(6));
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void leavingTheBatchTwoStepsLaterIsBroken() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-e").withStep(5));
        log.decode(LifecycleEvent.of(LEFT_BATCH, "req-e").withStep(7));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("took part in step 6"));
    }

    @Test
    void finishingAtTheStepAfterTheCancelIsBroken() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-f").withStep(5));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-f").withOutcome(LifecycleOutcome.COMPLETED).withStep(6));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.requestId()).isEqualTo("req-f"));
    }

    @Test
    void aCancelObservedWithoutItsStepIsNotSkippedWhenStepsFollow() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-g"));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-g").withOutcome(LifecycleOutcome.COMPLETED).withStep(9));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("without its step"));
    }
}
