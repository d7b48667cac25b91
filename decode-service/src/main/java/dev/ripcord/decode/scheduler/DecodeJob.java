package dev.ripcord.decode.scheduler;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.worker.job.JobState;
import dev.ripcord.worker.job.WorkerJob;

/**
 * One generation in the decode worker: what continuous batching needs on top of the shared {@link WorkerJob}.
 * {@link JobState#WAITING} is "KV reserved, transfer not landed"; {@link JobState#RUNNING} is "in the batch". Fields
 * are touched only on the engine loop thread unless marked volatile.
 */
public final class DecodeJob extends WorkerJob<DecodeEvent> {

    final DecodeRequest request;
    volatile ReceiveSession session;

    /** The last step started when the cancel was observed; guarded by the scheduler's step lock. */
    long observedStep = Long.MAX_VALUE;

    /**
     * Set and cleared on the engine loop; read by a canceller on any thread, which requests the engine's stop on it
     * (so that a step whose every sequence is cancelled stops at its next layer boundary).
     */
    volatile Sequence sequence;

    /**
     * Set while the job waits in the admission queue for its pages; whoever clears it (the loop admitting it, a
     * cancel, its max-wait) owns what happens next, exactly once.
     */
    final AtomicBoolean queuedForPages = new AtomicBoolean();
    /** Completes when the job leaves admission: pages reserved, or ended by a cancel. */
    final CompletableFuture<DecodeJob> admitted = new CompletableFuture<>();

    // Engine-loop state.
    int pagesNeeded;
    /**
     * Pages committed to requests admitted past this one while it waited: once they reach {@link #pagesNeeded},
     * nobody passes it any more.
     */
    int pagesPassed;
    int committedPages;
    int generated;
    /** {@link System#nanoTime()} when its first token (prefill's) was emitted: the start of its decode time. */
    long firstTokenNanos;

    /** The request's stop token ids, sorted. */
    private final int[] stopTokenIds;

    DecodeJob(DecodeRequest request) {
        super(request.requestId());
        this.request = request;
        this.stopTokenIds = request.stopTokenIds() == null ? new int[0] : request.stopTokenIds().clone();
        java.util.Arrays.sort(stopTokenIds);
    }

    /** Whether {@code token} is one of the request's own stop tokens (they apply even with ignore_eos). */
    boolean stopsOn(int token) {
        return java.util.Arrays.binarySearch(stopTokenIds, token) >= 0;
    }

    @Override
    public String toString() {
        return "DecodeJob[" + requestId() + " " + state() + " generated=" + generated + "]";
    }
}
