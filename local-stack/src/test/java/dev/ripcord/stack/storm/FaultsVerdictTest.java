package dev.ripcord.stack.storm;

import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

import dev.ripcord.stack.storm.FaultSchedule.Fault;
import dev.ripcord.stack.storm.FaultsVerdict.ErrorAnswer;
import dev.ripcord.stack.storm.FaultsVerdict.Evidence;
import dev.ripcord.stack.storm.FaultsVerdict.FaultWindow;
import dev.ripcord.stack.storm.FaultsVerdict.Gate;
import dev.ripcord.stack.storm.FaultsVerdict.Unverifiable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fault bench's gates on hand-built summaries: a clean one passes every gate, and each failure a user would
 * call one fails exactly its gate and names it in the verdict.
 */
class FaultsVerdictTest {

    private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");
    private static final FaultWindow KILL = new FaultWindow(Fault.WORKER_KILL, "decode-2", T0.plusSeconds(10),
            T0.plusSeconds(20), "pid 42 gone after SIGKILL");
    private static final FaultWindow DELAY = new FaultWindow(Fault.NET_DELAY, "gateway<->workers",
            T0.plusSeconds(30), T0.plusSeconds(40), "1000 bytes forwarded with the delay");

    private static Evidence clean() {
        return new Evidence(EnumSet.of(Fault.WORKER_KILL, Fault.NET_DELAY), List.of(KILL, DELAY), Map.of(),
                List.of(error("500 internal_error", 12, 13)), 0, List.of(), 0, 0, true, 0,
                List.of(new Unverifiable("r1:x", "KV_RELEASED", "decode-2")), List.of(), List.of(), 0, true, 4,
                List.of(), 0, 20);
    }

    private static ErrorAnswer error(String kind, long sentS, long answeredS) {
        return new ErrorAnswer("req-" + sentS, "gateway-1", kind, T0.plusSeconds(sentS), T0.plusSeconds(answeredS));
    }

    /** {@code clean()} with one field changed, through a builder of the record's components. */
    private static Evidence with(UnaryOperator<Builder> change) {
        return change.apply(new Builder(clean())).build();
    }

    private static void assertFailsOnly(Evidence e, String gate) {
        List<Gate> gates = FaultsVerdict.gates(e);
        assertThat(gates.stream().filter(g -> !g.passed()).map(Gate::name)).as("failed gates").containsExactly(gate);
        assertThat(FaultsVerdict.verdict(gates)).isEqualTo("FAIL: " + gate);
        assertThat(FaultsVerdict.passed(gates)).isFalse();
    }

    @Test
    void aCleanRunPassesEveryGate() {
        List<Gate> gates = FaultsVerdict.gates(clean());
        assertThat(gates).allMatch(Gate::passed);
        assertThat(FaultsVerdict.verdict(gates)).isEqualTo("PASS");
        assertThat(FaultsVerdict.errorsByFault(clean()).get("worker_kill")).containsEntry("500 internal_error", 1L);
    }

    @Test
    void anErrorOutsideEveryFaultWindowFails() {
        assertFailsOnly(with(b -> b.errors(List.of(error("500 internal_error", 50, 51)))), "errors_by_kind");
    }

    @Test
    void anErrorOfAKindItsFaultDoesNotCauseFails() {
        // During the delay only: a 50 ms delay explains no error at all.
        assertFailsOnly(with(b -> b.errors(List.of(error("503 service_unavailable", 31, 32)))), "errors_by_kind");
        // During the kill, but a kind a worker kill does not cause.
        assertFailsOnly(with(b -> b.errors(List.of(error("400 bad_request", 11, 12)))), "errors_by_kind");
    }

    @Test
    void moreErrorsThanTheFaultsBudgetFails() {
        List<ErrorAnswer> many = new ArrayList<>();
        for (int i = 0; i < 21; i++) {
            many.add(error("500 internal_error", 11, 12));
        }
        assertFailsOnly(with(b -> b.errors(many)), "errors_by_kind");
        assertThat(FaultsVerdict.gates(with(b -> b.errors(many.subList(0, 20))))).allMatch(Gate::passed);
    }

    @Test
    void unavailableAnswersToRequestsSentWhileAFaultLastsAreNotRequestsItBroke() {
        // A killed worker breaks the 20 requests in flight; every request sent until the stack serves again may be
        // answered 503 with Retry-After (no worker for its role): that is the designed answer, not a broken request.
        List<ErrorAnswer> broken = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            broken.add(error("stream internal_error", 9, 11));
        }
        List<ErrorAnswer> withUnavailable = new ArrayList<>(broken);
        for (int i = 0; i < 30; i++) {
            withUnavailable.add(error("503 service_unavailable", 12, 12));
        }
        assertThat(FaultsVerdict.gates(with(b -> b.errors(withUnavailable)))).allMatch(Gate::passed);
        // One more broken request is over the budget, however many 503s came beside it.
        List<ErrorAnswer> oneMore = new ArrayList<>(withUnavailable);
        oneMore.add(error("500 internal_error", 9, 11));
        assertFailsOnly(with(b -> b.errors(oneMore)), "errors_by_kind");
        // A 503 to a request that was in flight when the fault struck is one it broke: in the budget.
        List<ErrorAnswer> inFlight503 = new ArrayList<>(broken);
        inFlight503.add(error("503 service_unavailable", 9, 11));
        assertFailsOnly(with(b -> b.errors(inFlight503)), "errors_by_kind");
        // After the window (the stack served again) a 503 is explained by nothing.
        assertFailsOnly(with(b -> b.errors(List.of(error("503 service_unavailable", 21, 21)))), "errors_by_kind");
    }

    @Test
    void aRefusedConnectionIsExplainedOnlyAtTheRestartedGateway() {
        FaultWindow restart = new FaultWindow(Fault.GATEWAY_RESTART, "gateway-2", T0.plusSeconds(50),
                T0.plusSeconds(60), "pid 7 exited, restarted as pid 8");
        Evidence atOther = with(b -> b.faults(List.of(KILL, DELAY, restart))
                .asked(EnumSet.of(Fault.WORKER_KILL, Fault.NET_DELAY, Fault.GATEWAY_RESTART))
                .errors(List.of(error("transport ConnectException", 55, 55))));
        assertFailsOnly(atOther, "errors_by_kind");
        Evidence atRestarted = with(b -> b.faults(List.of(KILL, DELAY, restart))
                .asked(EnumSet.of(Fault.WORKER_KILL, Fault.NET_DELAY, Fault.GATEWAY_RESTART))
                .errors(List.of(new ErrorAnswer("r", "gateway-2", "transport ConnectException",
                        T0.plusSeconds(55), T0.plusSeconds(55)))));
        assertThat(FaultsVerdict.gates(atRestarted)).allMatch(Gate::passed);
    }

    @Test
    void aStrayAbortFails() {
        assertFailsOnly(with(b -> b.strayAborts(1)), "stray_aborts");
    }

    @Test
    void aRequestWithoutATerminalOutcomeFails() {
        assertFailsOnly(with(b -> b.withoutTerminal(List.of("steady-1-3 (200 no [DONE])"))),
                "without_terminal_outcome");
    }

    @Test
    void aPartialTextThatIsNotAPrefixFails() {
        assertFailsOnly(with(b -> b.partialNotPrefix(1)), "partial_not_prefix");
    }

    @Test
    void aWrongOutputFails() {
        assertFailsOnly(with(b -> b.wrongOutputs(1)), "wrong_outputs");
    }

    @Test
    void anAuditThatDidNotRunOrFoundAViolationFails() {
        assertFailsOnly(with(b -> b.auditRan(false)), "audit");
        assertFailsOnly(with(b -> b.auditViolations(1)), "audit");
    }

    @Test
    void aRequestTheAuditDidNotSeeFails() {
        assertFailsOnly(with(b -> b.unseen(List.of("storm-17 x 1"))), "audit_coverage");
    }

    @Test
    void anUnverifiableFindingOnAnInstanceNoFaultKilledFails() {
        assertFailsOnly(with(b -> b.unverifiable(List.of(new Unverifiable("r2:y", "PAGES_FREED", "decode-1")))),
                "unverifiable_unexcused");
        assertFailsOnly(with(b -> b.unverifiable(List.of(new Unverifiable("r2:y", "PAGES_FREED", null)))),
                "unverifiable_unexcused");
    }

    @Test
    void anUnverifiableFindingOnTheKilledInstanceUnderItsSuffixedNameIsExcusedAndOnlyThere() {
        // Against an external broker an instance names itself with a random suffix on the log.
        assertThat(FaultsVerdict.gates(with(b -> b.unverifiable(List.of(new Unverifiable("r2:y", "PAGES_FREED",
                "decode-2-3fcb94")))))).allMatch(Gate::passed);
        assertFailsOnly(with(b -> b.unverifiable(List.of(new Unverifiable("r2:y", "PAGES_FREED", "decode-1-3fcb94")))),
                "unverifiable_unexcused");
        assertThat(FaultsVerdict.names("decode-1", "decode-10")).isFalse();
        assertThat(FaultsVerdict.names("decode-1", "decode-10-3fcb94")).isFalse();
    }

    @Test
    void anErrorEventInAStreamThatBeganIsJudgedByItsCode() {
        assertThat(FaultsVerdict.gates(with(b -> b.errors(List.of(error("stream internal_error", 12, 13))))))
                .allMatch(Gate::passed);
        assertFailsOnly(with(b -> b.errors(List.of(error("stream internal_error", 31, 32)))), "errors_by_kind");
    }

    @Test
    void anAbsentMetricFails() {
        assertFailsOnly(with(b -> b.metricsAbsent(List.of("gateway-1 ripcord_gateway_legs_linked"))),
                "metrics_absent");
    }

    @Test
    void aLeakOrABusyWorkerFails() {
        assertFailsOnly(with(b -> b.leaks(1)), "leaks");
        assertFailsOnly(with(b -> b.workersIdle(false)), "workers_idle");
    }

    @Test
    void aLostCancelOrNoProbeAtAllFails() {
        assertFailsOnly(with(b -> b.lostCancels(List.of("probe-decode-1 [decode-2: []]"))), "lost_cancels");
        assertFailsOnly(with(b -> b.probes(0)), "cancel_probes");
    }

    @Test
    void anOperatorCancelThatWasNotSentFails() {
        assertFailsOnly(with(b -> b.operatorUnsent(1)), "operator_cancels_unsent");
    }

    @Test
    void aFaultWithoutEvidenceOrNeverInjectedFails() {
        FaultWindow noEvidence = new FaultWindow(Fault.NET_DELAY, "gateway<->workers", T0.plusSeconds(30),
                T0.plusSeconds(40), null);
        assertFailsOnly(with(b -> b.faults(List.of(KILL, noEvidence))), "fault_evidence");
        assertFailsOnly(with(b -> b.faults(List.of(KILL))), "faults_injected");
        assertFailsOnly(with(b -> b.faults(List.of(KILL)).skipped(Map.of("net_delay", "injection failed: boom"))),
                "faults_injected");
        // A fault that cannot be injected on this stack, and says why, is not a failure.
        assertThat(FaultsVerdict.gates(with(b -> b.asked(EnumSet.of(Fault.WORKER_KILL, Fault.NET_DELAY,
                Fault.KV_NET)).skipped(Map.of("kv_net", "shared memory: no socket to fault"))))).allMatch(Gate::passed);
    }

    /** A mutable copy of an {@link Evidence}, one setter per component the tests change. */
    private static final class Builder {
        private Set<Fault> asked;
        private List<FaultWindow> faults;
        private Map<String, String> skipped;
        private List<ErrorAnswer> errors;
        private long strayAborts;
        private List<String> withoutTerminal;
        private long partialNotPrefix;
        private long wrongOutputs;
        private boolean auditRan;
        private long auditViolations;
        private List<Unverifiable> unverifiable;
        private List<String> unseen;
        private List<String> metricsAbsent;
        private long leaks;
        private boolean workersIdle;
        private long probes;
        private List<String> lostCancels;
        private long operatorUnsent;
        private final int budgetScale;

        Builder(Evidence e) {
            asked = e.faultsAsked();
            faults = e.injected();
            skipped = e.skipped();
            errors = e.errors();
            strayAborts = e.strayAborts();
            withoutTerminal = e.withoutTerminal();
            partialNotPrefix = e.partialNotPrefix();
            wrongOutputs = e.wrongOutputs();
            auditRan = e.auditRan();
            auditViolations = e.auditViolations();
            unverifiable = e.unverifiable();
            unseen = e.unseenByAudit();
            metricsAbsent = e.metricsAbsent();
            leaks = e.leaks();
            workersIdle = e.workersIdle();
            probes = e.probes();
            lostCancels = e.lostCancels();
            operatorUnsent = e.operatorUnsent();
            budgetScale = e.budgetScale();
        }

        Builder asked(Set<Fault> v) { asked = v; return this; }
        Builder faults(List<FaultWindow> v) { faults = v; return this; }
        Builder skipped(Map<String, String> v) { skipped = v; return this; }
        Builder errors(List<ErrorAnswer> v) { errors = v; return this; }
        Builder strayAborts(long v) { strayAborts = v; return this; }
        Builder withoutTerminal(List<String> v) { withoutTerminal = v; return this; }
        Builder partialNotPrefix(long v) { partialNotPrefix = v; return this; }
        Builder wrongOutputs(long v) { wrongOutputs = v; return this; }
        Builder auditRan(boolean v) { auditRan = v; return this; }
        Builder auditViolations(long v) { auditViolations = v; return this; }
        Builder unverifiable(List<Unverifiable> v) { unverifiable = v; return this; }
        Builder unseen(List<String> v) { unseen = v; return this; }
        Builder metricsAbsent(List<String> v) { metricsAbsent = v; return this; }
        Builder leaks(long v) { leaks = v; return this; }
        Builder workersIdle(boolean v) { workersIdle = v; return this; }
        Builder probes(long v) { probes = v; return this; }
        Builder lostCancels(List<String> v) { lostCancels = v; return this; }
        Builder operatorUnsent(long v) { operatorUnsent = v; return this; }

        Evidence build() {
            return new Evidence(asked, faults, skipped, errors, strayAborts, withoutTerminal, partialNotPrefix,
                    wrongOutputs, auditRan, auditViolations, unverifiable, unseen, metricsAbsent, leaks, workersIdle,
                    probes, lostCancels, operatorUnsent, budgetScale);
        }
    }
}
