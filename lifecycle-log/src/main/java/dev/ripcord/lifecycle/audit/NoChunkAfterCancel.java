package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#NO_CHUNK_AFTER_CANCEL}: prefill starts no chunk after it observed the cancel. Its CANCEL_OBSERVED
 * names the chunk the engine was computing for the job then ({@code chunk}); that one chunk, and only it, may
 * finish afterwards. A CANCEL_OBSERVED without a chunk allows none. Judged on every job with a CHUNK_DONE after its
 * CANCEL_OBSERVED, whatever its service is called.
 */
final class NoChunkAfterCancel extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent observed = job.first(LifecycleEventType.CANCEL_OBSERVED);
        if (observed == null) {
            return;
        }
        List<LifecycleEvent> later = chunksAfter(job, observed);
        List<LifecycleEvent> unexpected = later.stream()
                .filter(c -> observed.chunk() == null || !observed.chunk().equals(c.chunk()))
                .toList();
        if (later.size() > 1 || !unexpected.isEmpty()) {
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(observed);
            evidence.addAll(later);
            LifecycleEvent first = unexpected.isEmpty() ? later.get(1) : unexpected.getFirst();
            found.add(Finding.broken(request.requestId(), Invariant.NO_CHUNK_AFTER_CANCEL,
                    "%s finished chunk %s after it observed the cancel (computing then: %s)".formatted(job.who(),
                            first.chunk(), observed.chunk() == null ? "none" : "chunk " + observed.chunk())
                            + request.note(), evidence));
        }
    }

    /** The chunks {@code job} finished after it observed the cancel. */
    static List<LifecycleEvent> chunksAfter(Job job, LifecycleEvent observed) {
        return job.events().stream()
                .filter(e -> e.type() == LifecycleEventType.CHUNK_DONE && e.seq() > observed.seq()).toList();
    }
}
