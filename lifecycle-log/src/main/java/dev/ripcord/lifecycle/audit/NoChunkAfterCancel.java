package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#NO_CHUNK_AFTER_CANCEL}: prefill starts no chunk after it observed the cancel; the one chunk
 * computing when it arrived may finish.
 */
final class NoChunkAfterCancel extends JobCheck {

    @Override
    void check(RequestHistory request, Job job, List<Finding> found) {
        LifecycleEvent observed = job.first(LifecycleEventType.CANCEL_OBSERVED);
        if (observed == null || !"prefill".equals(job.service())) {
            return;
        }
        List<LifecycleEvent> later = chunksAfter(job, observed);
        if (later.size() > 1) {
            List<LifecycleEvent> evidence = new ArrayList<>();
            evidence.add(observed);
            evidence.addAll(later);
            found.add(Finding.broken(request.requestId(), Invariant.NO_CHUNK_AFTER_CANCEL,
                    "prefill %s started %d chunk(s) after it observed the cancel (chunk %s onwards)".formatted(
                            job.instance(), later.size() - 1, later.get(1).chunk()) + request.note(), evidence));
        }
    }

    /** The chunks {@code job} finished after it observed the cancel. */
    static List<LifecycleEvent> chunksAfter(Job job, LifecycleEvent observed) {
        return job.events().stream()
                .filter(e -> e.type() == LifecycleEventType.CHUNK_DONE && e.seq() > observed.seq()).toList();
    }
}
