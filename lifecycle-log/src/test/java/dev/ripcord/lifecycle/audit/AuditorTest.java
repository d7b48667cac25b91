package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.Origin;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class AuditorTest {

    private static final Auditor.Options WHOLE_LOG = new Auditor.Options(null, null, Duration.ZERO);

    private static CancelEvent cancel(String id, Instant at) {
        return CancelEvent.of(id, CancelReason.CLIENT_DISCONNECT, new Origin("gateway", "g1"), at);
    }

    @Test
    void aCleanLogOfServedAndCancelledRequestsPassesAndIsCounted() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        Instant cancelledAt = log.now();
        log.cancelledMidPrefill("req-b");

        AuditReport report = Auditor.audit(log.events(), List.of(cancel("req-b", cancelledAt)), WHOLE_LOG);

        assertThat(report.violations()).isEmpty();
        assertThat(report.passed()).isTrue();
        assertThat(report.requests()).isEqualTo(2);
        assertThat(report.outcomes()).containsEntry("COMPLETED", 1L).containsEntry("CANCELLED", 1L);
        assertThat(report.cancels()).isEqualTo(1);
        assertThat(report.cancelsByReason()).containsEntry("CLIENT_DISCONNECT", 1L);
        assertThat(report.abortsByPhase()).containsEntry("prefill:prefill", 1L).containsEntry("decode:transfer", 1L);
        assertThat(report.latencies()).containsKeys("cancel->prefill abort", "cancel->decode abort",
                "prefill observed->abort");
        assertThat(report.latencies().get("cancel->prefill abort").count()).isEqualTo(1);
        assertThat(report.wastedPrefillTokens()).isEqualTo(128);
        assertThat(report.tokensAfterCancel()).isEqualTo(64);
        assertThat(report.losses()).isEmpty();
    }

    /** Regression: after {@code ./ripcord up}, the audit counted its 240 warm-up requests as the user's. */
    @Test
    void warmUpRequestsAreCheckedButNotCountedAsTheUsers() {
        AuditLogs log = new AuditLogs();
        log.completed("warm-1");
        log.completed("warm-2");
        log.completed("req-a");
        List<LifecycleEvent> events = log.events().stream()
                .map(e -> e.type() == ADMITTED && e.requestId().startsWith("warm-")
                        ? e.withDetail(LifecycleEvent.WARM_UP) : e)
                .toList();

        AuditReport report = Auditor.audit(events, List.of(), WHOLE_LOG);

        assertThat(report.passed()).isTrue();
        assertThat(report.requests()).isEqualTo(1);
        assertThat(report.outcomes()).containsExactly(java.util.Map.entry("COMPLETED", 1L));
        assertThat(report.events()).isEqualTo(events.size()); // their events were read and checked all the same
    }

    @Test
    void aPlantedDoubleAbortAChunkAfterCancelAndANeverReleasedSessionAreEachNamed() {
        AuditLogs log = new AuditLogs();
        log.completed("req-ok");
        // double abort on decode
        log.cancelledMidPrefill("req-double");
        LifecycleEvent second = log.decode(LifecycleEvent.of(ABORTED, "req-double")
                .withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.TOMBSTONE).withDetail("transfer"));
        // two chunks after the cancel was observed: the second one was started after it
        log.gateway(LifecycleEvent.of(ADMITTED, "req-chunk"));
        log.prefill(LifecycleEvent.of(STARTED, "req-chunk").withTokens(256));
        LifecycleEvent observed = log.prefill(LifecycleEvent.of(CANCEL_OBSERVED, "req-chunk")
                .withCancel(CancelReason.DEADLINE, CancelSource.KAFKA));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-chunk").withChunk(0).withTokens(64));
        LifecycleEvent late = log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-chunk").withChunk(1).withTokens(64));
        log.prefill(LifecycleEvent.of(ABORTED, "req-chunk").withDetail("prefill"));
        log.prefill(LifecycleEvent.of(PAGES_FREED, "req-chunk"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-chunk").withOutcome(LifecycleOutcome.CANCELLED));
        // a session opened and never released
        log.gateway(LifecycleEvent.of(ADMITTED, "req-leak"));
        LifecycleEvent opened = log.decode(LifecycleEvent.of(KV_OPENED, "req-leak"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-leak").withOutcome(LifecycleOutcome.FAILED));
        log.gateway(LifecycleEvent.of(ADMITTED, "req-later")); // moves the clock on: req-leak is not in flight

        AuditReport report = Auditor.audit(log.events(), List.of(), new Auditor.Options(null, null,
                Duration.ofMillis(1)));

        assertThat(report.passed()).isFalse();
        assertThat(report.violationsOf(Invariant.AT_MOST_ONE_ABORT)).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo("req-double");
            assertThat(v.events()).hasSize(2).contains(second);
        });
        assertThat(report.violationsOf(Invariant.NO_CHUNK_AFTER_CANCEL)).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo("req-chunk");
            assertThat(v.events()).contains(observed, late);
        });
        assertThat(report.violationsOf(Invariant.KV_SESSION_RELEASED_ONCE)).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo("req-leak");
            assertThat(v.events()).contains(opened);
        });
        assertThat(report.violations()).extracting(Violation::requestId)
                .containsOnly("req-double", "req-chunk", "req-leak");
    }

    @Test
    void aRequestWithoutTerminalOutcomeIsAViolationOnceItIsPastTheInFlightGrace() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-lost"));
        log.completed("req-after");

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.ONE_TERMINAL_OUTCOME))
                .extracting(Violation::requestId).containsExactly("req-lost");
        AuditReport generous = Auditor.audit(log.events(), List.of(),
                new Auditor.Options(null, null, Duration.ofMinutes(1)));
        assertThat(generous.violations()).isEmpty();
        assertThat(generous.inFlight()).isEqualTo(1);
    }

    @Test
    void twoTerminalOutcomesAreAViolation() {
        AuditLogs log = new AuditLogs();
        log.completed("req-twice");
        log.gateway(LifecycleEvent.of(FINISHED, "req-twice").withOutcome(LifecycleOutcome.CANCELLED));

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.ONE_TERMINAL_OUTCOME))
                .singleElement().satisfies(v -> assertThat(v.events()).hasSize(2));
    }

    /**
     * What the bench's {@code double-terminal} sabotage leaves: the context closed once (one FINISHED), the writer
     * wrote {@code [DONE]} twice (two TERMINAL_FRAME). The audit fails the request on the writer's evidence.
     */
    @Test
    void twoTerminalFramesWrittenForOneFinishedRequestFailTheAudit() {
        AuditLogs log = new AuditLogs();
        log.completed("req-frames");
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-frames").withDetail("done"));
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-frames").withDetail("done"));
        log.completed("req-fine");
        log.gateway(LifecycleEvent.of(TERMINAL_FRAME, "req-fine").withDetail("done"));

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);

        assertThat(report.passed()).isFalse();
        assertThat(report.violations()).singleElement().satisfies(v -> {
            assertThat(v.invariant()).isEqualTo(Invariant.ONE_TERMINAL_OUTCOME);
            assertThat(v.requestId()).isEqualTo("req-frames");
            assertThat(v.message()).contains("2 terminal frames");
        });
    }

    @Test
    void anAbortAfterANormalFinishIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.completed("req-x");
        log.decode(LifecycleEvent.of(ABORTED, "req-x").withDetail("decode"));

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.NO_ABORT_AFTER_FINISH))
                .singleElement().satisfies(v -> assertThat(v.message()).contains("after it finished normally"));
    }

    @Test
    void decodeLeavingTheBatchLaterThanTheStepAfterItObservedTheCancelIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-d"));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-d").withStep(5));
        log.decode(LifecycleEvent.of(LEFT_BATCH, "req-d").withStep(6));
        log.decode(LifecycleEvent.of(ABORTED, "req-d").withDetail("decode"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-d").withOutcome(LifecycleOutcome.CANCELLED));
        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violations()).isEmpty();

        log.gateway(LifecycleEvent.of(ADMITTED, "req-e"));
        log.decode(LifecycleEvent.of(CANCEL_OBSERVED, "req-e").withStep(5));
        log.decode(LifecycleEvent.of(LEFT_BATCH, "req-e").withStep(7));
        log.decode(LifecycleEvent.of(ABORTED, "req-e").withDetail("decode"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-e").withOutcome(LifecycleOutcome.CANCELLED));
        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.NO_TOKEN_AFTER_CANCEL))
                .extracting(Violation::requestId).containsExactly("req-e");
    }

    @Test
    void releasingASessionBeforeItDrainedIsAViolation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-r"));
        log.prefill(LifecycleEvent.of(KV_OPENED, "req-r"));
        log.prefill(LifecycleEvent.of(KV_RELEASED, "req-r"));
        log.prefill(LifecycleEvent.of(KV_DRAINED, "req-r"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-r").withOutcome(LifecycleOutcome.FAILED));

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.KV_SESSION_RELEASED_ONCE))
                .singleElement().satisfies(v -> assertThat(v.message()).contains("before it drained"));
    }

    @Test
    void pagesReservedAndNeverFreedAreAViolation() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-p"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-p").withPages(3));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-p").withOutcome(LifecycleOutcome.FAILED));
        log.gateway(LifecycleEvent.of(FINISHED, "req-p").withOutcome(LifecycleOutcome.FAILED));

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).violationsOf(Invariant.PAGES_FREED))
                .extracting(Violation::requestId).containsExactly("req-p");
    }

    @Test
    void eventsTheLogLostMakeMissingEventsUnverifiableNotViolations() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-q"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-q").withPages(3));
        log.lose("d1", 2); // the decode instance's PAGES_FREED among them
        log.add("decode", "d1", LifecycleEvent.of(LifecycleEventType.DROPPED, null).withDropped(2, 2, 3));
        log.gateway(LifecycleEvent.of(FINISHED, "req-q").withOutcome(LifecycleOutcome.COMPLETED));

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);

        assertThat(report.violations()).isEmpty();
        assertThat(report.unverifiable()).extracting(Violation::invariant).containsExactly(Invariant.PAGES_FREED);
        assertThat(report.losses()).singleElement().satisfies(loss -> {
            assertThat(loss.instance()).isEqualTo("d1");
            assertThat(loss.count()).isEqualTo(2);
            assertThat(loss.fromSeq()).isEqualTo(2);
            assertThat(loss.toSeq()).isEqualTo(3);
            assertThat(loss.reported()).isTrue();
        });
    }

    @Test
    void aSequenceGapNoMarkerExplainsIsReportedAsALoss() {
        AuditLogs log = new AuditLogs();
        log.completed("req-1");
        log.lose("p1", 3);
        log.completed("req-2");

        assertThat(Auditor.audit(log.events(), List.of(), WHOLE_LOG).losses()).singleElement()
                .satisfies(loss -> assertThat(loss.reported()).isFalse());
    }

    @Test
    void duplicatesFromAnAtLeastOnceReadCountOnce() {
        AuditLogs log = new AuditLogs();
        log.completed("req-dup");
        List<LifecycleEvent> twice = new java.util.ArrayList<>(log.events());
        twice.addAll(log.events());

        AuditReport report = Auditor.audit(twice, List.of(), WHOLE_LOG);
        assertThat(report.violations()).isEmpty();
        assertThat(report.events()).isEqualTo(log.events().size());
    }

    @Test
    void aRequestIdReusedAfterItsRequestEndedIsASecondRequestNotTwoTerminalOutcomes() {
        AuditLogs log = new AuditLogs();
        log.completed("req-again");
        log.cancelledMidPrefill("req-again");

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);
        assertThat(report.violations()).isEmpty();
        assertThat(report.requests()).isEqualTo(2);
        assertThat(report.outcomes()).containsEntry("COMPLETED", 1L).containsEntry("CANCELLED", 1L);
    }

    /** d1 (process "one") admits req-crash and opens its session, then is restarted as process "two". */
    private static AuditLogs crashDuringATransferThenRestart(boolean cleanStop) {
        AuditLogs log = new AuditLogs();
        log.restart("d1", "one");
        log.completed("req-before");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-crash"));
        log.gateway(LifecycleEvent.of(ROUTED, "req-crash").withRoute("p1", "d1"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-crash").withPages(4));
        log.decode(LifecycleEvent.of(KV_OPENED, "req-crash").withDetail("RECEIVER"));
        if (cleanStop) {
            log.stop("decode", "d1");
        }
        log.gateway(LifecycleEvent.of(FINISHED, "req-crash").withOutcome(LifecycleOutcome.FAILED));
        log.restart("d1", "two");
        log.completed("req-after");
        return log;
    }

    @Test
    void aRestartedInstancesEventsAreItsNewProcessesNotDuplicatesOfTheOldOnes() {
        AuditLogs log = crashDuringATransferThenRestart(false);

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);

        // d1's second process numbers its events from 1 again: every one of them is read, none taken for a duplicate.
        assertThat(report.events()).isEqualTo(log.events().size());
        assertThat(report.outcomes()).containsEntry("COMPLETED", 2L).containsEntry("FAILED", 1L);
        assertThat(report.losses()).isEmpty();
        assertThat(report.violations()).isEmpty();
    }

    @Test
    void whatAProcessThatDiedHadOpenIsUnverifiableNotAViolation() {
        AuditReport report = Auditor.audit(crashDuringATransferThenRestart(false).events(), List.of(), WHOLE_LOG);

        assertThat(report.violations()).isEmpty();
        assertThat(report.unverifiable()).extracting(Violation::invariant)
                .containsExactlyInAnyOrder(Invariant.KV_SESSION_RELEASED_ONCE, Invariant.PAGES_FREED);
        assertThat(report.unverifiable()).allSatisfy(v -> {
            assertThat(v.requestId()).isEqualTo("req-crash");
            assertThat(v.message()).contains("ended without a clean stop and was restarted");
            // The process that should have logged it, for a reader that excuses it by a fault on that instance.
            assertThat(v.instance()).isEqualTo("d1");
            assertThat(v.process()).startsWith("d1@");
        });
        assertThat(AuditReportJson.toJson(report).path("unverifiable")).allSatisfy(u ->
                assertThat(u.path("instance").asString()).isEqualTo("d1"));
    }

    @Test
    void whatAProcessThatStoppedCleanlyLeftOpenIsAViolation() {
        AuditReport report = Auditor.audit(crashDuringATransferThenRestart(true).events(), List.of(), WHOLE_LOG);

        assertThat(report.unverifiable()).isEmpty();
        assertThat(report.violations()).extracting(Violation::invariant)
                .containsExactlyInAnyOrder(Invariant.KV_SESSION_RELEASED_ONCE, Invariant.PAGES_FREED);
    }

    @Test
    void aProcessThatNothingFollowedIsNotTakenForDead() {
        AuditLogs log = new AuditLogs();
        log.restart("d1", "only");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-open"));
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-open").withPages(2));
        log.gateway(LifecycleEvent.of(FINISHED, "req-open").withOutcome(LifecycleOutcome.FAILED));

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);

        assertThat(report.violations()).extracting(Violation::invariant).containsExactly(Invariant.PAGES_FREED);
        assertThat(report.unverifiable()).isEmpty();
    }

    @Test
    void aRequestWhoseGatewayDiedBeforeItsEndIsUnverifiableNotAViolation() {
        AuditLogs log = new AuditLogs();
        log.restart("g1", "first");
        log.gateway(LifecycleEvent.of(ADMITTED, "req-orphan"));
        log.restart("g1", "second"); // killed with the request open, started again
        log.completed("req-next");

        AuditReport report = Auditor.audit(log.events(), List.of(), WHOLE_LOG);

        assertThat(report.violations()).isEmpty();
        assertThat(report.unverifiable()).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo("req-orphan");
            assertThat(v.invariant()).isEqualTo(Invariant.ONE_TERMINAL_OUTCOME);
        });
    }
}
