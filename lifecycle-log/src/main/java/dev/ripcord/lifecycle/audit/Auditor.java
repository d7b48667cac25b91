package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;

/**
 * Checks the cancellation invariants ({@link Invariant}) over a lifecycle log and the cancellations topic, and
 * summarises what happened. A pure function of its inputs: no I/O, no clock, thread-safe.
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

    private static final String GATEWAY = "gateway";

    /** Log order for humans: by time, then by instance and sequence number. */
    public static final Comparator<LifecycleEvent> LOG_ORDER = Comparator
            .comparing(LifecycleEvent::timestamp, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparing(LifecycleEvent::instance, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparingLong(LifecycleEvent::seq);

    private static final Comparator<LifecycleEvent> BY_SEQ = Comparator.comparingLong(LifecycleEvent::seq);

    private Auditor() {
    }

    public static AuditReport audit(Collection<LifecycleEvent> events, Collection<CancelEvent> cancels) {
        return audit(events, cancels, Options.DEFAULT);
    }

    public static AuditReport audit(Collection<LifecycleEvent> events, Collection<CancelEvent> cancels,
                                    Options options) {
        List<LifecycleEvent> log = dedupe(events);
        Instant from = options.from() != null ? options.from()
                : log.stream().map(LifecycleEvent::timestamp).min(Comparator.naturalOrder()).orElse(Instant.EPOCH);
        Instant to = options.to() != null ? options.to()
                : log.stream().map(LifecycleEvent::timestamp).max(Comparator.naturalOrder()).orElse(from);

        List<EventLoss> losses = losses(log);
        Set<String> lossy = new HashSet<>();
        losses.forEach(l -> lossy.add(l.instance()));
        boolean gatewayLossy = losses.stream().anyMatch(l -> GATEWAY.equals(l.service()));

        Map<String, List<LifecycleEvent>> byRequest = new LinkedHashMap<>();
        for (LifecycleEvent e : log) {
            if (e.requestId() != null) {
                byRequest.computeIfAbsent(e.requestId(), id -> new ArrayList<>()).add(e);
            }
        }
        Map<String, Instant> cancelTime = new HashMap<>();
        Map<String, Long> cancelsByReason = new TreeMap<>();
        for (CancelEvent c : cancels) {
            cancelTime.merge(c.requestId(), c.timestamp(), (a, b) -> a.isBefore(b) ? a : b);
            cancelsByReason.merge(c.reason().name(), 1L, Long::sum);
        }

        Findings findings = new Findings(lossy, gatewayLossy, crashedIncarnations(log));
        Map<String, Long> outcomes = new TreeMap<>();
        Map<String, Long> abortsByPhase = new TreeMap<>();
        Map<String, List<Duration>> hops = new TreeMap<>();
        long wasted = 0;
        long afterCancel = 0;
        int inFlight = 0;

        int requests = 0;
        for (Incarnation incarnation : incarnations(byRequest)) {
            String id = incarnation.requestId();
            List<LifecycleEvent> all = incarnation.events();
            // Warm-up traffic is checked like any other request, but not counted as the user's.
            boolean warmUp = all.stream().anyMatch(e -> is(e, GATEWAY, LifecycleEventType.ADMITTED)
                    && LifecycleEvent.WARM_UP.equals(e.detail()));
            if (!warmUp) {
                requests++;
            }
            findings.note = incarnation.use() == 1 ? "" : " (use %d of this request ID)".formatted(incarnation.use());
            Instant first = all.getFirst().timestamp();
            Instant last = all.getLast().timestamp();
            boolean began = all.stream().anyMatch(e -> is(e, GATEWAY, LifecycleEventType.ADMITTED));
            boolean partial = last.isAfter(to.minus(options.inFlightGrace()))
                    || (!began && first.isBefore(from.plus(options.inFlightGrace())));

            List<LifecycleEvent> finished = all.stream()
                    .filter(e -> is(e, GATEWAY, LifecycleEventType.FINISHED)).toList();
            if (finished.size() > 1) {
                findings.violation(id, Invariant.ONE_TERMINAL_OUTCOME,
                        "the request reached %d terminal outcomes".formatted(finished.size()), finished);
            } else if (finished.isEmpty()) {
                if (partial) {
                    inFlight++;
                } else {
                    // A gateway that died with the request open never logged its end.
                    findings.process = all.stream().filter(e -> is(e, GATEWAY, LifecycleEventType.ADMITTED))
                            .map(Auditor::process).findFirst().orElse(null);
                    findings.missing(id, Invariant.ONE_TERMINAL_OUTCOME, GATEWAY, null,
                            "the request never reached a terminal outcome", tail(all));
                    findings.process = null;
                }
            }
            LifecycleOutcome outcome = finished.isEmpty() ? null : finished.getFirst().outcome();
            if (outcome != null && !warmUp) {
                outcomes.merge(outcome.name(), 1L, Long::sum);
            }

            // By process: an instance restarted is two processes, each with its own sequence numbers.
            Map<String, List<LifecycleEvent>> byInstance = new TreeMap<>();
            for (LifecycleEvent e : all) {
                if (!GATEWAY.equals(e.service())) {
                    byInstance.computeIfAbsent(process(e), k -> new ArrayList<>()).add(e);
                }
            }
            for (List<LifecycleEvent> job : byInstance.values()) {
                job.sort(BY_SEQ);
                String service = job.getFirst().service();
                String instance = job.getFirst().instance();
                List<LifecycleEvent> aborts = of(job, LifecycleEventType.ABORTED);
                List<LifecycleEvent> ends = of(job, LifecycleEventType.JOB_FINISHED);
                LifecycleEvent observed = first(job, LifecycleEventType.CANCEL_OBSERVED);

                if (aborts.size() > 1) {
                    findings.violation(id, Invariant.AT_MOST_ONE_ABORT,
                            "%s %s aborted the request %d times".formatted(service, instance, aborts.size()), aborts);
                }
                if (!aborts.isEmpty() && !ends.isEmpty()) {
                    LifecycleEvent end = ends.getFirst();
                    List<LifecycleEvent> pair = new ArrayList<>(ends);
                    pair.addAll(aborts);
                    pair.sort(BY_SEQ);
                    boolean after = aborts.getLast().seq() > end.seq() && end.outcome() == LifecycleOutcome.COMPLETED;
                    findings.violation(id, Invariant.NO_ABORT_AFTER_FINISH, after
                            ? "%s %s aborted the job after it finished normally".formatted(service, instance)
                            : "%s %s ended the job both aborted and %s".formatted(service, instance, end.outcome()),
                            pair);
                } else if (ends.size() > 1) {
                    findings.violation(id, Invariant.NO_ABORT_AFTER_FINISH,
                            "%s %s ended the job %d times".formatted(service, instance, ends.size()), ends);
                }
                if (observed != null && "prefill".equals(service)) {
                    List<LifecycleEvent> later = job.stream()
                            .filter(e -> e.type() == LifecycleEventType.CHUNK_DONE && e.seq() > observed.seq())
                            .toList();
                    if (later.size() > 1) {
                        List<LifecycleEvent> evidence = new ArrayList<>();
                        evidence.add(observed);
                        evidence.addAll(later);
                        findings.violation(id, Invariant.NO_CHUNK_AFTER_CANCEL,
                                "prefill %s started %d chunk(s) after it observed the cancel (chunk %s onwards)"
                                        .formatted(instance, later.size() - 1, later.get(1).chunk()), evidence);
                    }
                    for (LifecycleEvent chunk : later) {
                        afterCancel += chunk.tokens() == null ? 0 : chunk.tokens();
                    }
                }
                if (observed != null && "decode".equals(service) && observed.step() != null) {
                    long limit = observed.step() + 1;
                    List<LifecycleEvent> late = job.stream().filter(e -> e.seq() > observed.seq() && e.step() != null
                            && ((e.type() == LifecycleEventType.LEFT_BATCH && e.step() > limit)
                                || (e.type() == LifecycleEventType.JOB_FINISHED && e.step() >= limit)))
                            .toList();
                    if (!late.isEmpty()) {
                        List<LifecycleEvent> evidence = new ArrayList<>();
                        evidence.add(observed);
                        evidence.addAll(late);
                        findings.violation(id, Invariant.NO_TOKEN_AFTER_CANCEL,
                                "decode %s observed the cancel at step %d but took part in step %d".formatted(
                                        instance, observed.step(), late.getLast().step()
                                                - (late.getLast().type() == LifecycleEventType.LEFT_BATCH ? 1 : 0)),
                                evidence);
                    }
                }
                findings.process = process(job.getFirst());
                checkSession(findings, id, service, instance, job, partial);
                checkPages(findings, id, service, instance, job, partial);
                findings.process = null;

                for (LifecycleEvent abort : aborts.subList(0, Math.min(1, aborts.size()))) {
                    abortsByPhase.merge(service + ":" + (abort.detail() == null ? "?" : abort.detail()), 1L,
                            Long::sum);
                    Instant cancelled = cancelTime.get(id);
                    if (cancelled != null) {
                        hop(hops, "cancel->" + service + " abort", cancelled, abort.timestamp());
                        if (observed != null) {
                            hop(hops, "cancel->" + service + " observed", cancelled, observed.timestamp());
                        }
                    }
                    if (observed != null) {
                        hop(hops, service + " observed->abort", observed.timestamp(), abort.timestamp());
                    }
                }
                if ("prefill".equals(service) && (outcome == LifecycleOutcome.CANCELLED || !aborts.isEmpty())) {
                    for (LifecycleEvent chunk : of(job, LifecycleEventType.CHUNK_DONE)) {
                        wasted += chunk.tokens() == null ? 0 : chunk.tokens();
                    }
                }
            }
        }

        Map<String, LatencyStats> latencies = new TreeMap<>();
        hops.forEach((hop, samples) -> latencies.put(hop, LatencyStats.of(samples)));
        return new AuditReport(from, to, log.size(), requests, outcomes, inFlight, cancels.size(),
                cancelsByReason, abortsByPhase, latencies, wasted, afterCancel, findings.violations,
                findings.unverifiable, losses);
    }

    /** One request's events in log order (time, then instance and sequence number), duplicates removed. */
    public static List<LifecycleEvent> timeline(Collection<LifecycleEvent> events, String requestId) {
        return dedupe(events).stream().filter(e -> requestId.equals(e.requestId())).sorted(LOG_ORDER).toList();
    }

    // ------------------------------------------------------------------------------------------ checks

    private static void checkSession(Findings findings, String id, String service, String instance,
                                     List<LifecycleEvent> job, boolean partial) {
        List<LifecycleEvent> opened = of(job, LifecycleEventType.KV_OPENED);
        List<LifecycleEvent> released = of(job, LifecycleEventType.KV_RELEASED);
        LifecycleEvent drained = first(job, LifecycleEventType.KV_DRAINED);
        if (released.size() > 1) {
            findings.violation(id, Invariant.KV_SESSION_RELEASED_ONCE,
                    "%s %s released the KV session %d times".formatted(service, instance, released.size()), released);
        }
        if (!released.isEmpty() && (drained == null || drained.seq() > released.getFirst().seq())) {
            List<LifecycleEvent> evidence = new ArrayList<>(released.subList(0, 1));
            if (drained != null) {
                evidence.add(drained);
            }
            findings.violation(id, Invariant.KV_SESSION_RELEASED_ONCE,
                    "%s %s released the KV session before it drained".formatted(service, instance), evidence);
        }
        if (!opened.isEmpty() && released.isEmpty() && !partial) {
            List<LifecycleEvent> evidence = new ArrayList<>(opened);
            evidence.addAll(tail(job));
            findings.missing(id, Invariant.KV_SESSION_RELEASED_ONCE, service, instance,
                    "%s %s opened a KV session that was never released".formatted(service, instance),
                    evidence.stream().distinct().sorted(BY_SEQ).toList());
        }
    }

    private static void checkPages(Findings findings, String id, String service, String instance,
                                   List<LifecycleEvent> job, boolean partial) {
        LifecycleEvent reserved = first(job, "decode".equals(service) ? LifecycleEventType.JOB_ADMITTED
                : LifecycleEventType.STARTED);
        List<LifecycleEvent> freed = of(job, LifecycleEventType.PAGES_FREED);
        if (freed.size() > 1) {
            findings.violation(id, Invariant.PAGES_FREED,
                    "%s %s freed the request's pages %d times".formatted(service, instance, freed.size()), freed);
        }
        if (reserved != null && freed.isEmpty() && !partial) {
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(reserved);
            evidence.addAll(tail(job));
            findings.missing(id, Invariant.PAGES_FREED, service, instance,
                    "%s %s reserved pages that were never freed".formatted(service, instance),
                    evidence.stream().distinct().sorted(BY_SEQ).toList());
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    /** One use of a request ID: clients choose IDs, and may reuse one once its request is over. */
    private record Incarnation(String requestId, int use, List<LifecycleEvent> events) {
    }

    /**
     * Splits each request's events (sorted in log order) at every gateway ADMITTED after the first: a reused ID is a
     * new request. Across instances this goes by timestamps, which is exact enough for uses seconds apart.
     */
    private static List<Incarnation> incarnations(Map<String, List<LifecycleEvent>> byRequest) {
        List<Incarnation> out = new ArrayList<>();
        for (Map.Entry<String, List<LifecycleEvent>> entry : byRequest.entrySet()) {
            List<LifecycleEvent> all = entry.getValue();
            all.sort(LOG_ORDER);
            List<LifecycleEvent> current = new ArrayList<>();
            int use = 1;
            for (LifecycleEvent e : all) {
                if (is(e, GATEWAY, LifecycleEventType.ADMITTED) && current.stream()
                        .anyMatch(c -> is(c, GATEWAY, LifecycleEventType.ADMITTED))) {
                    out.add(new Incarnation(entry.getKey(), use++, current));
                    current = new ArrayList<>();
                }
                current.add(e);
            }
            out.add(new Incarnation(entry.getKey(), use, current));
        }
        return out;
    }

    private static final class Findings {
        String note = "";
        /** The process whose job is being checked ({@link #process}), or null. */
        String process;
        final List<Violation> violations = new ArrayList<>();
        final List<Violation> unverifiable = new ArrayList<>();
        final Set<String> lossyInstances;
        final boolean gatewayLossy;
        final Set<String> crashed;

        Findings(Set<String> lossyInstances, boolean gatewayLossy, Set<String> crashed) {
            this.lossyInstances = lossyInstances;
            this.gatewayLossy = gatewayLossy;
            this.crashed = crashed;
        }

        void violation(String id, Invariant invariant, String message, List<LifecycleEvent> events) {
            violations.add(new Violation(id, invariant, message + note, events));
        }

        /** A missing event: a violation, unless the instance (or, for the gateway, any gateway) lost events. */
        void missing(String id, Invariant invariant, String service, String instance, String message,
                     List<LifecycleEvent> events) {
            boolean lost = instance == null ? gatewayLossy : lossyInstances.contains(instance);
            boolean died = process != null && crashed.contains(process);
            String why = died ? " (unverifiable: the process ended without a clean stop and was restarted; what it "
                    + "had open when it died was never logged)" : lost ? " (unverifiable: the instance lost events)"
                    : "";
            (lost || died ? unverifiable : violations).add(new Violation(id, invariant, message + note + why,
                    events));
        }
    }

    private static List<LifecycleEvent> dedupe(Collection<LifecycleEvent> events) {
        Map<String, LifecycleEvent> unique = new LinkedHashMap<>();
        for (LifecycleEvent e : events) {
            unique.putIfAbsent(process(e) + "#" + e.seq(), e);
        }
        return new ArrayList<>(unique.values());
    }

    /**
     * The process that emitted {@code e}: its instance and incarnation. A restarted instance keeps its ID and starts
     * its sequence numbers again from 1; without the incarnation its second process's events would pass for
     * duplicates of the first's. Events without one (older builds) are one process per instance.
     */
    private static String process(LifecycleEvent e) {
        return e.incarnation() == null ? e.instance() : e.instance() + "@" + e.incarnation();
    }

    /**
     * The processes that died: no {@link LifecycleEventType#STOPPED} marker, and a later process of the same instance
     * (its first event after this one's last) shows that it ended. What such a process had open when it died is
     * unverifiable: a crash takes its last events with it.
     */
    private static Set<String> crashedIncarnations(List<LifecycleEvent> log) {
        Map<String, Map<String, Instant[]>> spans = new TreeMap<>();
        Set<String> stopped = new HashSet<>();
        for (LifecycleEvent e : log) {
            if (e.incarnation() == null) {
                continue;
            }
            Instant[] span = spans.computeIfAbsent(e.instance(), k -> new LinkedHashMap<>())
                    .computeIfAbsent(process(e), k -> new Instant[] {e.timestamp(), e.timestamp()});
            span[0] = e.timestamp().isBefore(span[0]) ? e.timestamp() : span[0];
            span[1] = e.timestamp().isAfter(span[1]) ? e.timestamp() : span[1];
            if (e.type() == LifecycleEventType.STOPPED) {
                stopped.add(process(e));
            }
        }
        Set<String> crashed = new HashSet<>();
        for (Map<String, Instant[]> processes : spans.values()) {
            processes.forEach((process, span) -> {
                boolean followed = processes.entrySet().stream()
                        .anyMatch(other -> !other.getKey().equals(process) && !other.getValue()[0].isBefore(span[1]));
                if (followed && !stopped.contains(process)) {
                    crashed.add(process);
                }
            });
        }
        return crashed;
    }

    /** DROPPED markers, and sequence gaps between the events seen of each instance that no marker covers. */
    private static List<EventLoss> losses(List<LifecycleEvent> log) {
        List<EventLoss> losses = new ArrayList<>();
        Map<String, List<LifecycleEvent>> byInstance = new TreeMap<>();
        for (LifecycleEvent e : log) {
            byInstance.computeIfAbsent(process(e), k -> new ArrayList<>()).add(e);
        }
        for (List<LifecycleEvent> events : byInstance.values()) {
            events.sort(BY_SEQ);
            List<long[]> covered = new ArrayList<>();
            for (LifecycleEvent e : events) {
                if (e.type() == LifecycleEventType.DROPPED && e.dropped() != null) {
                    losses.add(new EventLoss(e.service(), e.instance(), e.dropped(), e.droppedFromSeq(),
                            e.droppedToSeq(), true));
                    covered.add(new long[] {e.droppedFromSeq(), e.droppedToSeq()});
                }
            }
            for (int i = 1; i < events.size(); i++) {
                long a = events.get(i - 1).seq() + 1;
                long b = events.get(i).seq() - 1;
                if (a <= b) {
                    long missing = 0;
                    for (long s = a; s <= b && missing <= 1_000_000; s++) {
                        long seq = s;
                        if (covered.stream().noneMatch(r -> seq >= r[0] && seq <= r[1])) {
                            missing++;
                        }
                    }
                    if (missing > 0) {
                        LifecycleEvent e = events.get(i);
                        losses.add(new EventLoss(e.service(), e.instance(), missing, a, b, false));
                    }
                }
            }
        }
        return losses;
    }

    private static boolean is(LifecycleEvent e, String service, LifecycleEventType type) {
        return e.type() == type && service.equals(e.service());
    }

    private static List<LifecycleEvent> of(List<LifecycleEvent> job, LifecycleEventType type) {
        return job.stream().filter(e -> e.type() == type).toList();
    }

    private static LifecycleEvent first(List<LifecycleEvent> job, LifecycleEventType type) {
        return job.stream().filter(e -> e.type() == type).findFirst().orElse(null);
    }

    private static List<LifecycleEvent> tail(List<LifecycleEvent> events) {
        return events.subList(Math.max(0, events.size() - 3), events.size());
    }

    private static void hop(Map<String, List<Duration>> hops, String hop, Instant from, Instant to) {
        Duration d = Duration.between(from, to);
        hops.computeIfAbsent(hop, k -> new ArrayList<>()).add(d.isNegative() ? Duration.ZERO : d);
    }
}
