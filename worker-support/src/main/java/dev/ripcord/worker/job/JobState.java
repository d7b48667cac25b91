package dev.ripcord.worker.job;

/**
 * The life of a worker job, the same machine in both workers. {@link #to} is the only way to compute a next state
 * and rejects every transition not in this table; {@link WorkerJob#moveTo} makes each one atomic with a CAS, so
 * exactly one of "done", "cancelled" and "failed" wins.
 *
 * <pre>
 *  from \ to   RUNNING  DONE  CANCELLED  FAILED
 *  (new)       -        -     -          -       a job is born WAITING
 *  WAITING     ✓        -     ✓          ✓
 *  RUNNING     -        ✓     ✓          ✓
 *  DONE        -        -     -          -       terminal
 *  CANCELLED   -        -     -          -       terminal
 *  FAILED      -        -     -          -       terminal
 * </pre>
 *
 * What WAITING and RUNNING mean is the worker's: prefill waits in its queue and runs chunks (then its transfer
 * completes); decode waits for its KV and runs in the batch.
 */
public enum JobState {
    /** Prefill: queued for a running slot. Decode: KV pages reserved, the transfer not landed yet. */
    WAITING,
    /** Prefill: computing chunks, then completing the transfer. Decode: in the batch, generating tokens. */
    RUNNING,
    /** Prefill: KV delivered. Decode: the last token emitted. */
    DONE,
    /** A cancel ended it. */
    CANCELLED,
    /** Something broke. */
    FAILED;

    /** Returns {@code next} if {@code this -> next} is in the table; throws {@link IllegalStateException} if not. */
    public JobState to(JobState next) {
        if (!canMoveTo(next)) {
            throw new IllegalStateException("illegal job transition " + this + " -> " + next);
        }
        return next;
    }

    public boolean canMoveTo(JobState next) {
        return switch (this) {
            case WAITING -> next == RUNNING || next == CANCELLED || next == FAILED;
            case RUNNING -> next == DONE || next == CANCELLED || next == FAILED;
            case DONE, CANCELLED, FAILED -> false;
        };
    }

    public boolean isTerminal() {
        return this == DONE || this == CANCELLED || this == FAILED;
    }
}
