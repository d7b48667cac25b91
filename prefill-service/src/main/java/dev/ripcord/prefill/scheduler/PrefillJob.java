package dev.ripcord.prefill.scheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.SendSession;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.worker.TransferClock;
import dev.ripcord.worker.job.JobState;
import dev.ripcord.worker.job.WorkerJob;

/**
 * One prompt in the prefill worker: what its chunked prefill needs on top of the shared {@link WorkerJob} (state,
 * cancel, stream, registration). {@link JobState#WAITING} is the queue; {@link JobState#RUNNING} covers the chunks
 * and then the completion of the transfer ({@link #finishing}). Fields are touched only by the engine loop thread
 * unless marked volatile.
 */
public final class PrefillJob extends WorkerJob<PrefillEvent> {

    final int[] tokens;
    final ReceiveDescriptor descriptor;
    final SamplingParams sampling;
    /** The job's place in the scheduling policy; set once it is queued, read by a canceller on any thread. */
    volatile PrefillPolicy.Entry<PrefillJob> entry;
    /** The chained prefix-cache keys of the prompt's complete pages ({@code PrefixKeys}), computed at admission. */
    final long[] pageKeys;
    /** Connected at admission (on the caller's thread), so decode's receive session is attached while queued. */
    volatile SendSession send;
    /** The last chunk is computed and the transfer is completing: a cancel now aborts the transfer. */
    volatile boolean finishing;
    /** The transfer's completion failed (either side aborted it, or it broke). */
    volatile boolean transferFailed;
    /**
     * Bench-only ({@code Sabotage.CHUNK_AFTER_CANCEL}): the cancel was observed between two chunks and requested no
     * stop, so the check point computes one more chunk before it stops the prompt.
     */
    volatile boolean chunkAfterCancel;

    /**
     * Set on the engine loop when the prompt starts; read by a canceller on any thread, which requests the engine's
     * stop on it (volatile: a cancel recorded before this is set is seen by the loop's check point, one recorded
     * after sees the sequence).
     */
    volatile Sequence sequence;

    // Engine-loop state.
    /** {@link System#nanoTime()} when its prefill started (the end of its queue time). */
    long startedNanos;
    int tokensDone;
    int pagesSent;
    int chunks;
    /** Prompt tokens whose KV came from the prefix cache; the prefill computed the rest. */
    int cachedTokens;
    /** Leading pages the lifecycle log has said stand in the prefix cache (PREFIX_HIT, PAGES_CACHED). */
    int pagesLoggedCached;
    final List<CompletableFuture<Void>> sends = new ArrayList<>();
    /** Bytes and busy wall time of its KV transfer (written by the engine loop, acknowledged by transport threads). */
    final TransferClock transferClock = new TransferClock();

    PrefillJob(String requestId, int[] tokens, ReceiveDescriptor descriptor, SamplingParams sampling,
               long[] pageKeys) {
        super(requestId);
        this.tokens = tokens;
        this.descriptor = descriptor;
        this.sampling = sampling;
        this.pageKeys = pageKeys;
    }

    @Override
    public String toString() {
        return "PrefillJob[" + requestId() + " " + state() + " " + tokensDone + "/" + tokens.length + "]";
    }
}
