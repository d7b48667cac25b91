package dev.ripcord.lifecycle.audit;

import java.time.Instant;
import java.util.List;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.Origin;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

/** The audit fails on doubt: only a loss or a crash of the very process excuses a missing event; no evidence fails. */
class AuditorEvidenceTest {

    private static AuditReport audit(AuditLogs log, List<CancelEvent> cancels) {
        return Auditor.audit(log.events(), cancels, Checks.WHOLE_LOG);
    }

    private static AuditReport audit(AuditLogs log) {
        return audit(log, List.of());
    }

    /** A decode job that reserves pages and ends without freeing them. */
    private static void leaksPages(AuditLogs log, String id) {
        log.gateway(LifecycleEvent.of(ADMITTED, id));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, id).withPages(2));
        log.decode(LifecycleEvent.of(JOB_FINISHED, id).withOutcome(LifecycleOutcome.FAILED));
        log.gateway(LifecycleEvent.of(FINISHED, id).withOutcome(LifecycleOutcome.FAILED));
    }

    @Test
    void aLossExcusesOnlyTheJobsThatBeganBeforeItNotTheOnesAfter() {
        AuditLogs log = new AuditLogs();
        leaksPages(log, "req-before-loss");
        log.lose("d1", 2);
        leaksPages(log, "req-after-loss");

        AuditReport report = audit(log);

        assertThat(report.unverifiable()).extracting(Violation::requestId).containsExactly("req-before-loss");
        assertThat(report.violations()).extracting(Violation::requestId).containsExactly("req-after-loss");
        assertThat(report.passed()).isFalse();
    }

    @Test
    void aLossOnOneGatewayNeverExcusesAnotherGatewaysMissingOutcome() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.add("gateway", "g2", LifecycleEvent.of(ADMITTED, "req-open"));
        log.lose("g1", 3);
        log.completed("req-b");

        AuditReport report = audit(log);

        assertThat(report.losses()).singleElement().satisfies(l -> assertThat(l.instance()).isEqualTo("g1"));
        assertThat(report.violationsOf(Invariant.ONE_TERMINAL_OUTCOME)).extracting(Violation::requestId)
                .containsExactly("req-open");
    }

    @Test
    void aLossOfAnEarlierProcessOfTheInstanceDoesNotExcuseTheRestartedOne() {
        AuditLogs log = new AuditLogs();
        log.restart("d1", "one");
        log.completed("req-1");
        log.lose("d1", 2);
        log.completed("req-2");
        log.stop("decode", "d1");
        log.restart("d1", "two");
        leaksPages(log, "req-leak");

        AuditReport report = audit(log);

        assertThat(report.violationsOf(Invariant.PAGES_FREED)).extracting(Violation::requestId)
                .containsExactly("req-leak");
        assertThat(report.unverifiable()).isEmpty();
    }

    @Test
    void aLostTailIsAGapOnceTheHeartbeatFollowsIt() {
        AuditLogs quiet = new AuditLogs();
        leaksPages(quiet, "req-tail");
        quiet.lose("d1", 1); // its PAGES_FREED, the last event d1 sent: nothing shows the loss
        assertThat(audit(quiet).violationsOf(Invariant.PAGES_FREED)).hasSize(1);
        assertThat(audit(quiet).losses()).isEmpty();

        AuditLogs beating = new AuditLogs();
        leaksPages(beating, "req-tail");
        beating.lose("d1", 1);
        beating.decode(LifecycleEvent.of(HEARTBEAT, null));

        AuditReport report = audit(beating);
        assertThat(report.losses()).singleElement().satisfies(l -> assertThat(l.fromSeq()).isEqualTo(3));
        assertThat(report.unverifiable()).extracting(Violation::invariant).containsExactly(Invariant.PAGES_FREED);
        assertThat(report.passed()).isTrue();
    }

    @Test
    void anEmptyWindowIsAnErrorNotAPass() {
        AuditReport report = Auditor.audit(List.of(), List.of(), Checks.WHOLE_LOG);

        assertThat(report.violations()).isEmpty();
        assertThat(report.errors()).singleElement().asString().contains("no lifecycle event");
        assertThat(report.passed()).isFalse();
    }

    @Test
    void requestsWithoutAnyWorkerEventAreAnError() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-1"));
        log.gateway(LifecycleEvent.of(ROUTED, "req-1").withRoute("p1", null));
        log.gateway(LifecycleEvent.of(FINISHED, "req-1").withOutcome(LifecycleOutcome.FAILED));

        AuditReport report = audit(log);

        assertThat(report.errors()).containsExactly("1 request(s) but no worker event about any of them: the "
                + "workers' lifecycle log is off or was lost");
        assertThat(report.passed()).isFalse();
    }

    @Test
    void aWindowWhoseRequestsAreAllInFlightIsAnError() {
        AuditLogs log = new AuditLogs();
        log.completed("req-1");

        AuditReport report = Auditor.audit(log.events(), List.of(),
                new Auditor.Options(null, null, java.time.Duration.ofMinutes(1)));

        assertThat(report.errors()).singleElement().asString()
                .startsWith("all 1 request(s) run into an edge of the range or the in-flight grace");
        assertThat(report.passed()).isFalse();
    }

    @Test
    void aCompletedRequestWhosePrefillWorkerLoggedNothingIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.completed("req-ok");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-silent"));
        log.gateway(LifecycleEvent.of(ROUTED, "req-silent").withRoute("p1", null));
        log.gateway(LifecycleEvent.of(ROUTED, "req-silent").withRoute(null, "d1"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-silent").withPages(1));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-silent").withOutcome(LifecycleOutcome.COMPLETED));
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-silent"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-silent").withOutcome(LifecycleOutcome.COMPLETED));

        AuditReport report = audit(log);

        assertThat(report.violations()).singleElement().satisfies(v -> {
            assertThat(v.invariant()).isEqualTo(Invariant.ROUTED_WORKERS_LOGGED);
            assertThat(v.requestId()).isEqualTo("req-silent");
            assertThat(v.message()).contains("no prefill worker");
        });
    }

    @Test
    void aCancelAWorkerNeverObservedOnAJobThatNeverEndedIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-deaf"));
        log.prefill(LifecycleEvent.of(QUEUED, "req-deaf"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-deaf").withOutcome(LifecycleOutcome.CANCELLED));
        log.cancelledMidPrefill("req-heard");
        Instant at = log.now();
        List<CancelEvent> cancels = List.of(
                CancelEvent.of("req-deaf", CancelReason.CLIENT_CANCEL, new Origin("gateway", "g1"), at),
                CancelEvent.of("req-heard", CancelReason.CLIENT_CANCEL, new Origin("gateway", "g1"), at));

        AuditReport report = audit(log, cancels);

        assertThat(report.violations()).singleElement().satisfies(v -> {
            assertThat(v.invariant()).isEqualTo(Invariant.CANCEL_OBSERVED_OR_FINISHED);
            assertThat(v.requestId()).isEqualTo("req-deaf");
        });
    }

    @Test
    void theChoicesOfAnNGreaterThanOneRequestArePartsOfItNotRequestsWithoutAnOutcome() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-n"));
        for (String wire : List.of("req-n", "req-n.1")) {
            log.gateway(LifecycleEvent.of(ROUTED, wire).withRoute("p1", null));
            log.gateway(LifecycleEvent.of(ROUTED, wire).withRoute(null, "d1"));
            log.prefill(LifecycleEvent.of(STARTED, wire).withTokens(8));
            log.prefill(LifecycleEvent.of(JOB_FINISHED, wire).withOutcome(LifecycleOutcome.COMPLETED));
            log.prefill(LifecycleEvent.of(PAGES_FREED, wire));
            log.decode(LifecycleEvent.of(JOB_ADMITTED, wire).withPages(1));
            log.decode(LifecycleEvent.of(JOB_FINISHED, wire).withOutcome(LifecycleOutcome.COMPLETED).withStep(3));
            log.decode(LifecycleEvent.of(PAGES_FREED, wire));
        }
        log.gateway(LifecycleEvent.of(FINISHED, "req-n").withOutcome(LifecycleOutcome.COMPLETED));

        AuditReport report = audit(log);

        assertThat(report.violations()).isEmpty();
        assertThat(report.requests()).isEqualTo(1);
        assertThat(report.outcomes()).containsExactly(java.util.Map.entry("COMPLETED", 1L));
    }
}
