package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.Origin;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class CancelObservedOrFinishedTest {

    private final CancelObservedOrFinished check = new CancelObservedOrFinished();

    private List<Finding> run(AuditLogs log, String... cancelled) {
        List<CancelEvent> cancels = java.util.Arrays.stream(cancelled).map(id -> CancelEvent.of(id,
                CancelReason.CLIENT_CANCEL, new Origin("gateway", "g1"), log.now())).toList();
        return check.check(History.of(log.events(), cancels, Checks.WHOLE_LOG));
    }

    @Test
    void jobsThatObservedTheCancelOrHadEndedFindNothing() {
        AuditLogs log = new AuditLogs();
        log.cancelledMidPrefill("req-c");
        log.completed("req-done"); // a cancel after the request finished: every job had ended
        assertThat(run(log, "req-c", "req-done")).isEmpty();
    }

    @Test
    void aJobThatNeitherObservedTheCancelNorEndedIsMissingItsObservation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-deaf"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-deaf").withPages(1));
        log.gateway(LifecycleEvent.of(FINISHED, "req-deaf").withOutcome(LifecycleOutcome.CANCELLED));
        assertThat(run(log)).isEmpty(); // no cancel published: nothing to observe
        assertThat(run(log, "req-deaf")).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.process()).isEqualTo("d1");
        });
    }
}
