package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class OneTerminalOutcomeTest {

    private final OneTerminalOutcome check = new OneTerminalOutcome();

    @Test
    void oneFinishedPerRequestFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.cancelledMidPrefill("req-b");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void twoFinishedAreBroken() {
        AuditLogs log = new AuditLogs();
        log.completed("req-twice");
        log.gateway(LifecycleEvent.of(FINISHED, "req-twice").withOutcome(LifecycleOutcome.CANCELLED));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isFalse();
            assertThat(f.events()).hasSize(2);
        });
    }

    @Test
    void noFinishedIsMissingAndNamesTheAdmittingGatewayProcess() {
        AuditLogs log = new AuditLogs();
        log.restart("g1", "one");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-lost"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.process()).isEqualTo("g1@one");
        });
    }
}
