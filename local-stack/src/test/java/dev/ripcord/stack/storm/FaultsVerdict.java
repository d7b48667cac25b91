package dev.ripcord.stack.storm;

import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import dev.ripcord.stack.storm.FaultSchedule.Fault;

/**
 * The fault bench's gates: everything a user would call a failure, each its own pass/fail with its figure, and the
 * verdict (every gate passed). A pure function of {@link Evidence}, so that each gate is shown to fail on a
 * hand-built summary ({@code FaultsVerdictTest}).
 *
 * <p>Errors are judged by kind and time: each error answer must overlap (from its request's send to its answer) the
 * window of an injected fault that expects its kind ({@link #EXPECTED}), within that fault's budget
 * ({@link #budget}); any other error fails the run. An unverifiable audit finding passes only when a fault that
 * killed that exact instance explains it (the audit itself limits a crash's excuse to that process's open jobs, and a
 * loss's to the jobs whose sequence span covers it).
 */
final class FaultsVerdict {

    /** One gate: its name in the JSON summary, whether it held, its figure, and what failed it. */
    record Gate(String name, boolean passed, long value, String detail) {
    }

    /** An injected fault as the gates see it; {@code evidence} null when nothing showed that it took effect. */
    record FaultWindow(Fault fault, String target, Instant from, Instant to, String evidence) {
    }

    /** An answer that was an error (or no answer): its request, gateway, kind, and when it was sent and answered. */
    record ErrorAnswer(String requestId, String gateway, String kind, Instant sent, Instant answered) {
    }

    /** An unverifiable audit finding: its request, invariant and the instance that should have logged it. */
    record Unverifiable(String requestId, String invariant, String instance) {
    }

    /**
     * What a run found, as the gates read it.
     *
     * @param faultsAsked      the faults the run was asked for
     * @param injected         the faults injected, with their windows and evidence
     * @param skipped          faults not injected, and why ({@code injection failed: ...} fails the run)
     * @param errors           every answer that was an error, storm and steady load
     * @param strayAborts      requests nobody cancelled that were answered as cancelled
     * @param withoutTerminal  requests whose client got no terminal answer (no answer, a stream without its end)
     * @param partialNotPrefix answers whose text is not a prefix of the reference (cancelled or failed part-way)
     * @param wrongOutputs     completed requests whose text is not the reference's
     * @param auditRan         whether {@code ripcord audit} produced a report
     * @param auditViolations  its violations plus its errors
     * @param unverifiable     its unverifiable findings
     * @param unseenByAudit    requests a gateway answered with 200 that the audit holds no ADMITTED for, as
     *                         {@code clientId x n}
     * @param metricsAbsent    metrics a check reads that a service did not export
     * @param leaks            pages, sessions, registrations, regions, gateway requests and legs left
     * @param workersIdle      whether every worker went back to idle
     * @param probes           cancels published during outages
     * @param lostCancels      of those, the ones a decode worker did not answer as cancelled
     * @param operatorUnsent   the storm's operator cancels whose send failed
     * @param budgetScale      requests in flight at once (storm and steady load): how many one fault may fail
     */
    record Evidence(Set<Fault> faultsAsked, List<FaultWindow> injected, Map<String, String> skipped,
                    List<ErrorAnswer> errors, long strayAborts, List<String> withoutTerminal, long partialNotPrefix,
                    long wrongOutputs, boolean auditRan, long auditViolations, List<Unverifiable> unverifiable,
                    List<String> unseenByAudit, List<String> metricsAbsent, long leaks, boolean workersIdle,
                    long probes, List<String> lostCancels, long operatorUnsent, int budgetScale) {
    }

    /** The error kinds each fault may cause; any other kind, or an error outside every fault's window, fails. */
    static final Map<Fault, Set<String>> EXPECTED = expected();

    private static Map<Fault, Set<String>> expected() {
        Map<Fault, Set<String>> m = new EnumMap<>(Fault.class);
        // A killed decode worker fails the legs it held (500, "the decode worker failed this request"; in a stream
        // that began, its error event); its restart refuses new ones until it is healthy (503).
        m.put(Fault.WORKER_KILL, Set.of("500 internal_error", "stream internal_error", "503 service_unavailable",
                "stream service_unavailable"));
        // Reset connections fail the legs on them, as a killed worker does.
        m.put(Fault.NET_RESET, m.get(Fault.WORKER_KILL));
        // A restarting gateway refuses connections (on its port only) and drains what it held.
        m.put(Fault.GATEWAY_RESTART, Set.of("transport ConnectException", "transport IOException",
                "503 service_unavailable", "stream service_unavailable"));
        // A paused prefill worker answers nothing for 3 s: the gateway may find no healthy worker.
        m.put(Fault.WORKER_PAUSE, Set.of("503 service_unavailable", "stream service_unavailable"));
        // A partition that drops, on one gateway-to-worker link: new connections to that worker are refused (the
        // gateway may find no healthy worker: 503), and the legs whose bytes it dropped are reset when it heals, as
        // reset connections fail them. The services-to-Kafka side causes no client error: its clients retry.
        m.put(Fault.NET_PARTITION, m.get(Fault.WORKER_KILL));
        // A broker kill and a 50 ms delay are below every timeout: no error is expected of them.
        m.put(Fault.BROKER_KILL, Set.of());
        m.put(Fault.NET_DELAY, Set.of());
        m.put(Fault.KV_NET, Set.of());
        return m;
    }

    private FaultsVerdict() {
    }

    /**
     * How many errors {@code fault} may cause: each request in flight when it struck may fail once; a restarting
     * gateway also refuses every request sent to it while it is down, which the storm's and steady load's request
     * count bounds. The 503 answers to requests sent while a fault lasted are not counted here
     * ({@link #unavailableSentDuring}).
     */
    static long budget(Fault fault, int inFlight, long requests) {
        return switch (fault) {
            case GATEWAY_RESTART -> inFlight + requests;
            case WORKER_KILL, NET_RESET, WORKER_PAUSE, NET_PARTITION -> inFlight;
            case BROKER_KILL, NET_DELAY, KV_NET -> 0;
        };
    }

    /** The answers a server gives when it has no worker for a request now: 503 with {@code Retry-After}. */
    static final Set<String> UNAVAILABLE = Set.of("503 service_unavailable", "stream service_unavailable");

    /**
     * Per injected fault (by its id), the {@link #UNAVAILABLE} answers charged to it whose requests were sent after it
     * struck. A fault that leaves a role without a reachable worker (a killed, paused or cut-off worker; reset
     * connections that open the gateway's breakers) makes the gateway answer every request sent meanwhile with 503
     * and {@code Retry-After}, as it should, until the stack serves again (the fault's window ends there): those
     * answers are bounded by the window, not by the requests in flight when it struck, which is what
     * {@link #budget} bounds (the requests the fault broke).
     */
    static Map<String, Long> unavailableSentDuring(Evidence e) {
        Map<String, Long> by = new LinkedHashMap<>();
        for (ErrorAnswer a : e.errors()) {
            FaultWindow w = explaining(e.injected(), a);
            if (w != null && UNAVAILABLE.contains(a.kind()) && !a.sent().isBefore(w.from())) {
                by.merge(w.fault().id, 1L, Long::sum);
            }
        }
        return by;
    }

    /** The errors charged to each injected fault (by its id), and the unexplained ones under {@code unexpected}. */
    static Map<String, Map<String, Long>> errorsByFault(Evidence e) {
        Map<String, Map<String, Long>> by = new LinkedHashMap<>();
        for (FaultWindow w : e.injected()) {
            by.put(w.fault().id, new TreeMap<>());
        }
        Map<String, Long> unexpected = new TreeMap<>();
        for (ErrorAnswer a : e.errors()) {
            FaultWindow w = explaining(e.injected(), a);
            (w == null ? unexpected : by.get(w.fault().id)).merge(a.kind(), 1L, Long::sum);
        }
        by.put("unexpected", unexpected);
        return by;
    }

    /** The first injected fault whose window overlaps {@code a} and that expects its kind (and target), or null. */
    private static FaultWindow explaining(List<FaultWindow> windows, ErrorAnswer a) {
        for (FaultWindow w : windows) {
            boolean overlaps = !a.answered().isBefore(w.from()) && !a.sent().isAfter(w.to());
            boolean kind = EXPECTED.getOrDefault(w.fault(), Set.of()).contains(a.kind());
            // A refused connection is a restarting gateway's only on that gateway.
            boolean target = !a.kind().startsWith("transport") || names(w.target(), a.gateway());
            if (overlaps && kind && target) {
                return w;
            }
        }
        return null;
    }

    /** Every gate, in the order the summary lists them. */
    static List<Gate> gates(Evidence e) {
        List<Gate> gates = new ArrayList<>();
        // Faults: each asked for was injected (or is not injectable here, and says why), each with its evidence.
        List<String> notInjected = new ArrayList<>();
        for (Fault f : e.faultsAsked()) {
            boolean done = e.injected().stream().anyMatch(w -> w.fault() == f);
            String why = e.skipped().get(f.id);
            if (!done && (why == null || why.startsWith("injection failed"))) {
                notInjected.add(f.id + (why == null ? " (never attempted: the schedule stopped)" : " (" + why + ")"));
            }
        }
        gates.add(gate("faults_injected", notInjected));
        gates.add(gate("fault_evidence", e.injected().stream().filter(w -> w.evidence() == null)
                .map(w -> w.fault().id + " on " + w.target() + ": nothing showed it took effect").toList()));
        // Errors by kind, each explained by a fault active at the time, within that fault's budget.
        Map<String, Map<String, Long>> byFault = errorsByFault(e);
        List<String> errorProblems = new ArrayList<>();
        byFault.get("unexpected").forEach((kind, n) -> errorProblems.add(n + " x " + kind
                + " outside every fault that explains it"));
        Map<String, Long> unavailableSentDuring = unavailableSentDuring(e);
        for (FaultWindow w : e.injected()) {
            long n = byFault.get(w.fault().id).values().stream().mapToLong(Long::longValue).sum()
                    - unavailableSentDuring.getOrDefault(w.fault().id, 0L);
            long budget = budget(w.fault(), e.budgetScale(), e.errors().size());
            if (n > budget) {
                errorProblems.add(w.fault().id + " caused " + n + " errors, over its budget of " + budget
                        + " (not counting the service_unavailable answers to requests sent while it lasted)");
            }
        }
        gates.add(new Gate("errors_by_kind", errorProblems.isEmpty(), e.errors().size(),
                String.join("; ", errorProblems)));
        gates.add(count("stray_aborts", e.strayAborts(), "requests nobody cancelled answered as cancelled"));
        gates.add(gate("without_terminal_outcome", e.withoutTerminal()));
        gates.add(count("partial_not_prefix", e.partialNotPrefix(), "partial texts that are not a prefix"));
        gates.add(count("wrong_outputs", e.wrongOutputs(), "completed texts that are not the reference"));
        gates.add(new Gate("audit", e.auditRan() && e.auditViolations() == 0, e.auditViolations(),
                e.auditRan() ? e.auditViolations() == 0 ? "" : e.auditViolations() + " violations or errors"
                        : "the audit did not run"));
        gates.add(gate("audit_coverage", e.unseenByAudit()));
        Set<String> killed = new java.util.HashSet<>();
        e.injected().stream().filter(w -> w.fault() == Fault.WORKER_KILL || w.fault() == Fault.GATEWAY_RESTART)
                .forEach(w -> killed.add(w.target()));
        gates.add(gate("unverifiable_unexcused", e.unverifiable().stream()
                .filter(u -> u.instance() == null || killed.stream().noneMatch(k -> names(k, u.instance())))
                .map(u -> u.invariant() + " " + u.requestId() + " on " + u.instance()
                        + " (no injected fault killed that instance)").toList()));
        gates.add(gate("metrics_absent", e.metricsAbsent()));
        gates.add(count("leaks", e.leaks(), "pages, sessions, registrations, regions, gateway requests or legs left"));
        gates.add(new Gate("workers_idle", e.workersIdle(), e.workersIdle() ? 0 : 1,
                e.workersIdle() ? "" : "a worker still holds something"));
        gates.add(gate("lost_cancels", e.lostCancels()));
        boolean outages = e.injected().stream().anyMatch(w -> w.fault() == Fault.BROKER_KILL
                || w.fault() == Fault.WORKER_KILL || w.fault() == Fault.NET_PARTITION);
        gates.add(new Gate("cancel_probes", !outages || e.probes() > 0, e.probes(),
                !outages || e.probes() > 0 ? "" : "no cancel was published during an outage"));
        gates.add(count("operator_cancels_unsent", e.operatorUnsent(), "operator cancels whose send failed"));
        return gates;
    }

    /**
     * Whether {@code instance}, as an instance names itself on the lifecycle log, is the launcher's {@code target}
     * ({@code decode-2}): itself, or with the random suffix a stack on an external broker adds
     * ({@code decode-2-3fcb94}).
     */
    static boolean names(String target, String instance) {
        return instance.equals(target) || instance.startsWith(target + "-")
                && instance.substring(target.length() + 1).matches("[0-9a-f]+");
    }

    /** "PASS", or "FAIL: " and the names of the gates that failed. */
    static String verdict(List<Gate> gates) {
        List<String> failed = gates.stream().filter(g -> !g.passed()).map(Gate::name).toList();
        return failed.isEmpty() ? "PASS" : "FAIL: " + String.join(", ", failed);
    }

    static boolean passed(List<Gate> gates) {
        return gates.stream().allMatch(Gate::passed);
    }

    private static Gate gate(String name, List<String> problems) {
        String detail = String.join("; ", problems.size() > 10 ? problems.subList(0, 10) : problems);
        return new Gate(name, problems.isEmpty(), problems.size(), problems.size() > 10
                ? detail + "; ... " + (problems.size() - 10) + " more" : detail);
    }

    private static Gate count(String name, long n, String what) {
        return new Gate(name, n == 0, n, n == 0 ? "" : n + " " + what);
    }
}
