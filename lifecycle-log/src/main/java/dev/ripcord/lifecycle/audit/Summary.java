package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;

/**
 * What happened, counted: outcomes, requests in flight, aborts by phase, cancel propagation per hop (timestamps across
 * processes: informational only, never a verdict), prefill work a cancel wasted.
 */
record Summary(Map<String, Long> outcomes, int inFlight, Map<String, Long> cancelsByReason,
               Map<String, Long> abortsByPhase, Map<String, LatencyStats> latencies, long wastedPrefillTokens,
               long tokensAfterCancel) {

    static Summary of(History history) {
        Map<String, Long> outcomes = new TreeMap<>();
        Map<String, Long> abortsByPhase = new TreeMap<>();
        Map<String, List<Duration>> hops = new TreeMap<>();
        Map<String, Instant> cancelTime = new HashMap<>();
        Map<String, Long> cancelsByReason = new TreeMap<>();
        for (CancelEvent c : history.cancels()) {
            cancelTime.merge(c.requestId(), c.timestamp(), (a, b) -> a.isBefore(b) ? a : b);
            cancelsByReason.merge(c.reason().name(), 1L, Long::sum);
        }
        long wasted = 0;
        long afterCancel = 0;
        int inFlight = 0;
        for (RequestHistory r : history.requests()) {
            List<LifecycleEvent> finished = r.gateway(LifecycleEventType.FINISHED);
            LifecycleOutcome outcome = finished.isEmpty() ? null : finished.getFirst().outcome();
            if (outcome != null && !r.warmUp()) {
                outcomes.merge(outcome.name(), 1L, Long::sum);
            }
            if (finished.isEmpty() && r.partial()) {
                inFlight++;
            }
            for (Job job : r.jobs()) {
                abort(job, cancelTime.get(r.requestId()), abortsByPhase, hops);
                if (!job.has(LifecycleEventType.CHUNK_DONE)) {
                    continue; // wasted prompt work: the jobs that compute chunks
                }
                LifecycleEvent observed = job.first(LifecycleEventType.CANCEL_OBSERVED);
                if (observed != null) {
                    afterCancel += tokens(NoChunkAfterCancel.chunksAfter(job, observed));
                }
                if (outcome == LifecycleOutcome.CANCELLED || job.has(LifecycleEventType.ABORTED)) {
                    wasted += tokens(job.of(LifecycleEventType.CHUNK_DONE));
                }
            }
        }
        Map<String, LatencyStats> latencies = new TreeMap<>();
        hops.forEach((hop, samples) -> latencies.put(hop, LatencyStats.of(samples)));
        return new Summary(outcomes, inFlight, cancelsByReason, abortsByPhase, latencies, wasted, afterCancel);
    }

    private static void abort(Job job, Instant cancelled, Map<String, Long> abortsByPhase,
                              Map<String, List<Duration>> hops) {
        LifecycleEvent abort = job.first(LifecycleEventType.ABORTED);
        if (abort == null) {
            return;
        }
        String service = job.service();
        LifecycleEvent observed = job.first(LifecycleEventType.CANCEL_OBSERVED);
        abortsByPhase.merge(service + ":" + (abort.detail() == null ? "?" : abort.detail()), 1L, Long::sum);
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

    private static long tokens(List<LifecycleEvent> chunks) {
        return chunks.stream().mapToLong(c -> c.tokens() == null ? 0 : c.tokens()).sum();
    }

    private static void hop(Map<String, List<Duration>> hops, String hop, Instant from, Instant to) {
        Duration d = Duration.between(from, to);
        hops.computeIfAbsent(hop, k -> new ArrayList<>()).add(d.isNegative() ? Duration.ZERO : d);
    }
}
