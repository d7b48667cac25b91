package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * Checks the cancellation invariants ({@link Invariant}) over a lifecycle log and the cancellations topic, and
 * summarises what happened. A pure function of its inputs: no I/O, no clock, thread-safe. The log is read once into
 * a {@link History}; each invariant is its own {@link InvariantCheck} ({@link InvariantCheck#ALL}), whose findings
 * {@link Excuses} sorts into violations and unverifiable items; {@link Summary} counts what happened.
 *
 * <h2>How it reads the log</h2>
 * <ul>
 *   <li>Events are grouped by request, then by emitting process (instance and incarnation: a restarted instance is
 *       a new process whose sequence numbers start again from 1). Within a process, order is the sequence number
 *       (exact); across processes only timestamps exist, and they are used only for latencies and timelines.</li>
 *   <li>Duplicates (the same process and sequence number twice, as an at-least-once read may give) count once.</li>
 *   <li>A request whose events run into an edge of the audited range (it began before {@code from}, or its last
 *       event is within {@link Options#inFlightGrace()} of {@code to}) is <em>in flight</em>: the "too many" checks
 *       apply to it (two aborts, a chunk after the cancel, a second release), the "missing" ones do not.</li>
 *   <li>Lost events ({@link LifecycleEventType#DROPPED} markers, sequence gaps) make "missing" findings on that
 *       instance <em>unverifiable</em> rather than violations: the audit never blames a request for an event the log
 *       itself lost, and says which instance lost how many.</li>
 *   <li>A process that died (no {@link LifecycleEventType#STOPPED} marker, and a later process of the same instance)
 *       makes "missing" findings on what it had open unverifiable too: a crash takes its last events with it.</li>
 * </ul>
 */
public final class Auditor {

    /**
     * @param from          start of the audited range, or null for "from the first event"
     * @param to            end of the audited range, or null for "up to the last event"
     * @param inFlightGrace how close to an edge of the range a request's events must be to count as in flight
     */
    public record Options(Instant from, Instant to, Duration inFlightGrace) {

        public static final Options DEFAULT = new Options(null, null, Duration.ofSeconds(30));

        public Options {
            Objects.requireNonNull(inFlightGrace, "inFlightGrace");
        }
    }

    /** Log order for humans: by time, then by instance and sequence number. */
    public static final Comparator<LifecycleEvent> LOG_ORDER = Comparator
            .comparing(LifecycleEvent::timestamp, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(LifecycleEvent::instance, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparingLong(LifecycleEvent::seq);

    private Auditor() {
    }

    public static AuditReport audit(Collection<LifecycleEvent> events, Collection<CancelEvent> cancels) {
        return audit(events, cancels, Options.DEFAULT);
    }

    public static AuditReport audit(Collection<LifecycleEvent> events, Collection<CancelEvent> cancels,
                                    Options options) {
        History history = History.of(events, cancels, options);
        Excuses excuses = new Excuses(history);
        List<Violation> violations = new ArrayList<>();
        List<Violation> unverifiable = new ArrayList<>();
        for (InvariantCheck check : InvariantCheck.ALL) {
            for (Finding finding : check.check(history)) {
                String excuse = finding.missing() ? excuses.excuse(finding) : null;
                (excuse == null ? violations : unverifiable).add(finding.violation(excuse == null ? "" : excuse));
            }
        }
        Summary s = Summary.of(history);
        return new AuditReport(history.from(), history.to(), history.log().size(),
                (int) history.requests().stream().filter(r -> !r.warmUp()).count(),
                s.outcomes(), s.inFlight(), history.cancels().size(), s.cancelsByReason(), s.abortsByPhase(),
                s.latencies(), s.wastedPrefillTokens(), s.tokensAfterCancel(), violations, unverifiable,
                history.losses(), Coverage.errors(history));
    }

    /** One request's events in log order (time, then instance and sequence number), duplicates removed. */
    public static List<LifecycleEvent> timeline(Collection<LifecycleEvent> events, String requestId) {
        return timeline(events, requestId::equals);
    }

    /** The events whose request ID {@code requestIds} accepts, deduplicated, in log order. */
    public static List<LifecycleEvent> timeline(Collection<LifecycleEvent> events,
                                                java.util.function.Predicate<String> requestIds) {
        return History.dedupe(events).stream().filter(e -> e.requestId() != null && requestIds.test(e.requestId()))
                .sorted(LOG_ORDER).toList();
    }
}
