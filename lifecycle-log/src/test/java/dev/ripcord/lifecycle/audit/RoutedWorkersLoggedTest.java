package dev.ripcord.lifecycle.audit;

import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class RoutedWorkersLoggedTest {

    private final RoutedWorkersLogged check = new RoutedWorkersLogged();

    /** Completed at the gateway, routed to p1 and d1, only d1 logged a job. */
    private static void prefillSilent(AuditLogs log, String id) {
        log.gateway(LifecycleEvent.of(ADMITTED, id));
        log.gateway(LifecycleEvent.of(ROUTED, id).withRoute("p1", null));
        log.gateway(LifecycleEvent.of(ROUTED, id).withRoute(null, "d1"));
        log.decode(LifecycleEvent.of(JOB_FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED));
        log.gateway(LifecycleEvent.of(FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED));
    }

    @Test
    void aCompletedRequestWithAJobOfEveryRoleFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aRoleThatLoggedNothingIsMissingWithNoProcessToExcuseIt() {
        AuditLogs log = new AuditLogs();
        prefillSilent(log, "req-silent");
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.process()).isNull();
            assertThat(f.message()).contains("no prefill worker");
        });
    }

    @Test
    void aLossOfAProcessOfThatRoleIsTheOnlyThingThatMayExcuseIt() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.lose("p1", 5);
        log.completed("req-b");
        prefillSilent(log, "req-silent");
        List<Finding> found = Checks.run(check, log);
        assertThat(found).singleElement().satisfies(f -> assertThat(f.process()).isEqualTo("p1"));
        assertThat(Auditor.audit(log.events(), List.of(), Checks.WHOLE_LOG).unverifiable())
                .extracting(Violation::invariant).containsExactly(Invariant.ROUTED_WORKERS_LOGGED);
    }

    @Test
    void failedRequestsAreNotJudged() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-f"));
        log.gateway(LifecycleEvent.of(ROUTED, "req-f").withRoute("p1", null));
        log.gateway(LifecycleEvent.of(FINISHED, "req-f").withOutcome(LifecycleOutcome.FAILED));
        assertThat(Checks.run(check, log)).isEmpty();
    }
}
