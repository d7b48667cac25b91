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

    @Test
    void twoTerminalFramesWrittenAreBrokenThoughTheContextClosedOnce() {
        AuditLogs log = new AuditLogs();
        log.completed("req-frames");
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-frames").withDetail("done"));
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-frames").withDetail("done"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isFalse();
            assertThat(f.message()).contains("2 terminal frames");
            assertThat(f.events()).extracting(LifecycleEvent::type).containsExactly(TERMINAL_FRAME, TERMINAL_FRAME);
        });
    }

    @Test
    void oneTerminalFramePerRequestFindsNothingWithSeveralChoicesToo() {
        AuditLogs log = new AuditLogs();
        log.completed("req-one");
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-one").withDetail("done"));
        // n = 2: each choice a job of its own under ID.k, one FINISHED and one frame for the request
        log.gateway(LifecycleEvent.of(ADMITTED, "req-n"));
        for (String choice : new String[] {"req-n.0", "req-n.1"}) {
            log.decode(LifecycleEvent.of(JOB_ADMITTED, choice).withPages(1));
            log.decode(LifecycleEvent.of(JOB_FINISHED, choice).withOutcome(LifecycleOutcome.COMPLETED));
            log.decode(LifecycleEvent.of(PAGES_FREED, choice).withPages(1));
        }
        log.gateway(LifecycleEvent.of(FINISHED, "req-n").withOutcome(LifecycleOutcome.COMPLETED).withTokens(8));
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-n").withDetail("body"));
        // a client that left: FINISHED, no frame written
        log.gateway(LifecycleEvent.of(ADMITTED, "req-gone"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-gone").withOutcome(LifecycleOutcome.CANCELLED));
        assertThat(Checks.run(check, log)).isEmpty();
    }
}
