package dev.ripcord.lifecycle.audit;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * A lifecycle log read once for the audit: duplicates removed, events grouped by request and by worker process, the
 * log's own losses and the processes that died. Immutable; built by {@link #of}.
 *
 * @param log      the events, duplicates removed
 * @param from     start of the audited range
 * @param to       end of the audited range
 * @param requests the requests, one per use of each ID
 * @param losses   events the log lost, per process
 * @param crashed  the processes that died (see {@link #crashedProcesses})
 * @param cancels  the cancel events of the range
 */
record History(List<LifecycleEvent> log, Instant from, Instant to, List<RequestHistory> requests,
               List<EventLoss> losses, Set<String> crashed, List<CancelEvent> cancels) {

    static final String GATEWAY = "gateway";

    static final Comparator<LifecycleEvent> BY_SEQ = Comparator.comparingLong(LifecycleEvent::seq);

    History {
        log = List.copyOf(log);
        requests = List.copyOf(requests);
        losses = List.copyOf(losses);
        crashed = Set.copyOf(crashed);
        cancels = List.copyOf(cancels);
    }

    static History of(Collection<LifecycleEvent> events, Collection<CancelEvent> cancels, Auditor.Options options) {
        List<LifecycleEvent> log = dedupe(events);
        Instant from = options.from() != null ? options.from()
                : log.stream().map(LifecycleEvent::timestamp).min(Comparator.naturalOrder()).orElse(Instant.EPOCH);
        Instant to = options.to() != null ? options.to()
                : log.stream().map(LifecycleEvent::timestamp).max(Comparator.naturalOrder()).orElse(from);
        Set<String> admitted = new HashSet<>();
        log.stream().filter(e -> is(e, LifecycleEventType.ADMITTED)).forEach(e -> admitted.add(e.requestId()));
        List<RequestHistory> requests = new ArrayList<>();
        for (List<LifecycleEvent> use : uses(log, admitted)) {
            RequestHistory request = request(use, 1, from, to, options, admitted);
            if (!requests.isEmpty() && requests.getLast().requestId().equals(request.requestId())) {
                request = request(use, requests.getLast().use() + 1, from, to, options, admitted);
            }
            requests.add(request);
        }
        return new History(log, from, to, requests, losses(log), crashedProcesses(log), List.copyOf(cancels));
    }

    /**
     * The request an event's ID belongs to: itself, or, for {@code ID.k} when only {@code ID} was admitted by a
     * gateway, the request {@code ID}: the worker-facing ID of choice {@code k} of an {@code n > 1} request.
     */
    static String requestOf(String id, Set<String> admittedIds) {
        if (admittedIds.contains(id)) {
            return id;
        }
        int dot = id.lastIndexOf('.');
        if (dot > 0 && dot < id.length() - 1 && id.substring(dot + 1).chars().allMatch(Character::isDigit)
                && admittedIds.contains(id.substring(0, dot))) {
            return id.substring(0, dot);
        }
        return id;
    }

    private static RequestHistory request(List<LifecycleEvent> all, int use, Instant from, Instant to,
                                          Auditor.Options options, Set<String> admittedIds) {
        Instant first = all.getFirst().timestamp();
        Instant last = all.getLast().timestamp();
        boolean began = all.stream().anyMatch(e -> is(e, LifecycleEventType.ADMITTED));
        boolean partial = last.isAfter(to.minus(options.inFlightGrace()))
                || (!began && first.isBefore(from.plus(options.inFlightGrace())));
        // A job is one worker process's part under one worker-facing ID (each choice of an n > 1 request has its own).
        Map<String, List<LifecycleEvent>> byProcess = new TreeMap<>();
        for (LifecycleEvent e : all) {
            if (!GATEWAY.equals(e.service())) {
                byProcess.computeIfAbsent(process(e) + " " + e.requestId(), k -> new ArrayList<>()).add(e);
            }
        }
        List<Job> jobs = new ArrayList<>();
        byProcess.forEach((key, events) -> {
            List<LifecycleEvent> sorted = events.stream().sorted(BY_SEQ).toList();
            LifecycleEvent head = sorted.getFirst();
            jobs.add(new Job(head.requestId(), process(head), head.service(), head.instance(), sorted));
        });
        return new RequestHistory(requestOf(all.getFirst().requestId(), admittedIds), use, all, partial, jobs);
    }

    /**
     * Each request's events in log order, split at every gateway ADMITTED after the first: a reused ID is a new
     * request. Across instances this goes by timestamps, which is exact enough for uses seconds apart.
     */
    private static List<List<LifecycleEvent>> uses(List<LifecycleEvent> log, Set<String> admittedIds) {
        Map<String, List<LifecycleEvent>> byRequest = new LinkedHashMap<>();
        for (LifecycleEvent e : log) {
            if (e.requestId() != null) {
                byRequest.computeIfAbsent(requestOf(e.requestId(), admittedIds), id -> new ArrayList<>()).add(e);
            }
        }
        List<List<LifecycleEvent>> out = new ArrayList<>();
        for (List<LifecycleEvent> all : byRequest.values()) {
            all.sort(Auditor.LOG_ORDER);
            List<LifecycleEvent> current = new ArrayList<>();
            for (LifecycleEvent e : all) {
                if (is(e, LifecycleEventType.ADMITTED) && current.stream().anyMatch(c -> is(c,
                        LifecycleEventType.ADMITTED))) {
                    out.add(current);
                    current = new ArrayList<>();
                }
                current.add(e);
            }
            out.add(current);
        }
        return out;
    }

    private static boolean is(LifecycleEvent e, LifecycleEventType type) {
        return e.type() == type && GATEWAY.equals(e.service());
    }

    static List<LifecycleEvent> dedupe(Collection<LifecycleEvent> events) {
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
    static String process(LifecycleEvent e) {
        return e.incarnation() == null ? e.instance() : e.instance() + "@" + e.incarnation();
    }

    /**
     * The processes that died: no {@link LifecycleEventType#STOPPED} marker, and a later process of the same instance
     * (its first event after this one's last) shows that it ended. What such a process had open when it died is
     * unverifiable: a crash takes its last events with it.
     */
    private static Set<String> crashedProcesses(List<LifecycleEvent> log) {
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

    /** DROPPED markers, and sequence gaps between the events seen of each process that no marker covers. */
    private static List<EventLoss> losses(List<LifecycleEvent> log) {
        List<EventLoss> losses = new ArrayList<>();
        Map<String, List<LifecycleEvent>> byProcess = new TreeMap<>();
        for (LifecycleEvent e : log) {
            byProcess.computeIfAbsent(process(e), k -> new ArrayList<>()).add(e);
        }
        for (List<LifecycleEvent> events : byProcess.values()) {
            events.sort(BY_SEQ);
            List<long[]> covered = new ArrayList<>();
            for (LifecycleEvent e : events) {
                if (e.type() == LifecycleEventType.DROPPED && e.dropped() != null) {
                    losses.add(new EventLoss(e.service(), e.instance(), e.dropped(), e.droppedFromSeq(),
                            e.droppedToSeq(), true, e.incarnation()));
                    covered.add(new long[] {e.droppedFromSeq(), e.droppedToSeq()});
                }
            }
            for (int i = 1; i < events.size(); i++) {
                long a = events.get(i - 1).seq() + 1;
                long b = events.get(i).seq() - 1;
                long missing = uncovered(a, b, covered);
                if (missing > 0) {
                    LifecycleEvent e = events.get(i);
                    losses.add(new EventLoss(e.service(), e.instance(), missing, a, b, false, e.incarnation()));
                }
            }
        }
        return losses;
    }

    private static long uncovered(long a, long b, List<long[]> covered) {
        long missing = 0;
        for (long s = a; s <= b && missing <= 1_000_000; s++) {
            long seq = s;
            if (covered.stream().noneMatch(r -> seq >= r[0] && seq <= r[1])) {
                missing++;
            }
        }
        return missing;
    }
}
