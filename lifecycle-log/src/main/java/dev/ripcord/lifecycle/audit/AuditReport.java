package dev.ripcord.lifecycle.audit;

import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;

/**
 * What {@link Auditor} found. Maps are sorted by key.
 *
 * @param from                 start of the audited range (the earliest event when none was given)
 * @param to                   end of the audited range (the latest event when none was given)
 * @param events               lifecycle events audited
 * @param requests             distinct requests seen, warm-up requests ({@link dev.ripcord.lifecycle.LifecycleEvent#WARM_UP}) left out
 * @param outcomes             requests by terminal outcome (COMPLETED, CANCELLED, FAILED), warm-up requests left out
 * @param inFlight             requests without a terminal outcome yet whose last event is within the in-flight grace
 *                             of the range's end, or that began before the range: not judged as missing anything
 * @param cancels              cancel events read from the cancellations topic
 * @param cancelsByReason      cancel events by reason
 * @param abortsByPhase        worker aborts by {@code service:phase} (e.g. {@code prefill:queued})
 * @param latencies            cancel propagation per hop (e.g. {@code cancel->prefill abort}), p50/p99/max
 * @param wastedPrefillTokens  prompt tokens prefill computed for requests that ended cancelled
 * @param tokensAfterCancel    of those, tokens in chunks that finished after prefill observed the cancel
 * @param violations           broken invariants; empty means the audit passes
 * @param unverifiable         missing events that a loss or a crash of the process that should have logged them
 *                             explains (see {@code Excuses})
 * @param losses               events lost per process (DROPPED markers, sequence gaps)
 * @param errors               why the window cannot be judged at all (no events, no worker events, every request in
 *                             flight); any makes the audit fail
 */
public record AuditReport(Instant from, Instant to, long events, int requests, Map<String, Long> outcomes,
                          int inFlight, int cancels, Map<String, Long> cancelsByReason,
                          Map<String, Long> abortsByPhase, Map<String, LatencyStats> latencies,
                          long wastedPrefillTokens, long tokensAfterCancel, List<Violation> violations,
                          List<Violation> unverifiable, List<EventLoss> losses, List<String> errors) {

    public AuditReport {
        outcomes = Collections.unmodifiableMap(new TreeMap<>(outcomes));
        cancelsByReason = Collections.unmodifiableMap(new TreeMap<>(cancelsByReason));
        abortsByPhase = Collections.unmodifiableMap(new TreeMap<>(abortsByPhase));
        latencies = Collections.unmodifiableMap(new TreeMap<>(latencies));
        violations = List.copyOf(violations);
        unverifiable = List.copyOf(unverifiable);
        losses = List.copyOf(losses);
        errors = List.copyOf(errors);
    }

    /**
     * Whether the audit passes: the window held evidence to judge ({@link #errors} empty) and every invariant held
     * on it. A missing event is a violation unless a loss or a crash of its own process explains it
     * ({@link #unverifiable}, shown but not failing).
     */
    public boolean passed() {
        return violations.isEmpty() && errors.isEmpty();
    }

    /** The violations of one invariant. */
    public List<Violation> violationsOf(Invariant invariant) {
        return violations.stream().filter(v -> v.invariant() == invariant).toList();
    }
}
