package dev.ripcord.lifecycle.audit;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;

import static dev.ripcord.lifecycle.LifecycleEventType.*;

/**
 * Builds lifecycle logs for the auditor's tests: three instances (gateway g1, prefill p1, decode d1), each with its
 * own sequence numbers, and a clock that advances 1 ms per event.
 */
final class AuditLogs {

    private final List<LifecycleEvent> events = new ArrayList<>();
    private final Map<String, Long> seqs = new HashMap<>();
    private Instant now = Instant.parse("2026-12-01T12:00:00Z");

    /** Each instance's process, once {@link #restart} gave it one (events without one: older builds). */
    private final Map<String, String> incarnations = new HashMap<>();

    LifecycleEvent add(String service, String instance, LifecycleEvent draft) {
        long seq = seqs.merge(instance, 1L, Long::sum);
        now = now.plusMillis(1);
        LifecycleEvent e = draft.stamped(service, instance, incarnations.get(instance), seq, now);
        events.add(e);
        return e;
    }

    /**
     * {@code instance} as a new process from now on (incarnation {@code incarnation}), its sequence numbers from 1
     * again: a restart, clean or not (see {@link #stop}).
     */
    void restart(String instance, String incarnation) {
        incarnations.put(instance, incarnation);
        seqs.remove(instance);
    }

    /** {@code instance}'s process stops cleanly: its STOPPED marker. */
    void stop(String service, String instance) {
        add(service, instance, LifecycleEvent.of(STOPPED, null));
    }

    /** Skips {@code n} sequence numbers of {@code instance} (events lost). */
    void lose(String instance, int n) {
        seqs.merge(instance, (long) n, Long::sum);
    }

    LifecycleEvent gateway(LifecycleEvent draft) {
        return add("gateway", "g1", draft);
    }

    LifecycleEvent prefill(LifecycleEvent draft) {
        return add("prefill", "p1", draft);
    }

    LifecycleEvent decode(LifecycleEvent draft) {
        return add("decode", "d1", draft);
    }

    Instant now() {
        return now;
    }

    /** A request that completes normally: every event in its place. */
    void completed(String id) {
        gateway(LifecycleEvent.of(ADMITTED, id));
        gateway(LifecycleEvent.of(ROUTED, id).withRoute("p1", "d1"));
        decode(LifecycleEvent.of(JOB_ADMITTED, id).withPages(4));
        decode(LifecycleEvent.of(KV_OPENED, id).withDetail("RECEIVER"));
        prefill(LifecycleEvent.of(QUEUED, id));
        prefill(LifecycleEvent.of(KV_OPENED, id).withDetail("SENDER"));
        prefill(LifecycleEvent.of(STARTED, id).withTokens(128));
        prefill(LifecycleEvent.of(CHUNK_DONE, id).withChunk(0).withTokens(64));
        prefill(LifecycleEvent.of(CHUNK_DONE, id).withChunk(1).withTokens(64));
        prefill(LifecycleEvent.of(KV_DRAINED, id));
        prefill(LifecycleEvent.of(KV_RELEASED, id).withBytes(4096));
        prefill(LifecycleEvent.of(JOB_FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED));
        prefill(LifecycleEvent.of(PAGES_FREED, id).withPages(2));
        decode(LifecycleEvent.of(KV_DRAINED, id));
        decode(LifecycleEvent.of(KV_RELEASED, id).withBytes(4096));
        decode(LifecycleEvent.of(KV_LANDED, id));
        decode(LifecycleEvent.of(JOB_FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED).withTokens(8).withStep(8));
        gateway(LifecycleEvent.of(FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED).withTokens(8));
        decode(LifecycleEvent.of(PAGES_FREED, id).withPages(4));
    }

    /** A request cancelled mid-prefill: one chunk in flight when the cancel arrived, then stopped. */
    void cancelledMidPrefill(String id) {
        gateway(LifecycleEvent.of(ADMITTED, id));
        gateway(LifecycleEvent.of(ROUTED, id).withRoute("p1", "d1"));
        decode(LifecycleEvent.of(JOB_ADMITTED, id).withPages(4));
        decode(LifecycleEvent.of(KV_OPENED, id));
        prefill(LifecycleEvent.of(QUEUED, id));
        prefill(LifecycleEvent.of(KV_OPENED, id));
        prefill(LifecycleEvent.of(STARTED, id).withTokens(256));
        prefill(LifecycleEvent.of(CHUNK_DONE, id).withChunk(0).withTokens(64));
        prefill(LifecycleEvent.of(CANCEL_OBSERVED, id).withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA)
                .withChunk(1)); // chunk 1 was computing

        prefill(LifecycleEvent.of(CHUNK_DONE, id).withChunk(1).withTokens(64));
        prefill(LifecycleEvent.of(ABORTED, id).withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA)
                .withDetail("prefill"));
        prefill(LifecycleEvent.of(KV_ABORTED, id));
        prefill(LifecycleEvent.of(KV_DRAINED, id));
        prefill(LifecycleEvent.of(KV_RELEASED, id).withBytes(1024));
        prefill(LifecycleEvent.of(PAGES_FREED, id));
        decode(LifecycleEvent.of(CANCEL_OBSERVED, id).withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA)
                .withStep(3));
        decode(LifecycleEvent.of(ABORTED, id).withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA)
                .withDetail("transfer"));
        decode(LifecycleEvent.of(KV_ABORTED, id));
        decode(LifecycleEvent.of(KV_DRAINED, id));
        decode(LifecycleEvent.of(KV_RELEASED, id).withBytes(1024));
        decode(LifecycleEvent.of(PAGES_FREED, id));
        gateway(LifecycleEvent.of(FINISHED, id).withOutcome(LifecycleOutcome.CANCELLED)
                .withCancel(CancelReason.CLIENT_DISCONNECT, null));
    }

    List<LifecycleEvent> events() {
        return List.copyOf(events);
    }

    static LifecycleEvent draft(LifecycleEventType type, String id) {
        return LifecycleEvent.of(type, id);
    }
}
