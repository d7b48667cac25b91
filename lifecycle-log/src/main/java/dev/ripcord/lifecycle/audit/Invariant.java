package dev.ripcord.lifecycle.audit;

/** The invariants {@link Auditor} checks (each one {@link InvariantCheck}); each {@link Violation} names one. */
public enum Invariant {
    /**
     * Every request reaches exactly one terminal outcome: one gateway FINISHED, and at most one terminal frame written
     * to the client (TERMINAL_FRAME).
     */
    ONE_TERMINAL_OUTCOME,
    /** A cancel leads to at most one abort per worker instance. */
    AT_MOST_ONE_ABORT,
    /** A job that finished normally is not aborted afterwards (and a job ends once). */
    NO_ABORT_AFTER_FINISH,
    /** Prefill starts no chunk after it observed the cancel (the one chunk computing when it arrived may finish). */
    NO_CHUNK_AFTER_CANCEL,
    /** Decode emits no token after it observed the cancel: the job leaves the batch at the next step. */
    NO_TOKEN_AFTER_CANCEL,
    /** Every KV session opened is released exactly once, and never before it drained. */
    KV_SESSION_RELEASED_ONCE,
    /** Every page reserved is freed, once. */
    PAGES_FREED,
    /** Every worker role a completed request was routed to (prefill, decode) logged a job for it. */
    ROUTED_WORKERS_LOGGED,
    /** Every worker job of a request whose cancel was published observed the cancel, or had ended. */
    CANCEL_OBSERVED_OR_FINISHED,
    /**
     * A job that received its cancel from the worker's registry while not yet ended observes it afterwards: a cancel
     * the worker received and then never acted on, the job ending otherwise, is what this catches.
     */
    CANCEL_RECEIVED_THEN_OBSERVED,
    /** A page enters the prefix cache only once complete: after the chunk that filled it completed. */
    PAGE_CACHED_WHEN_COMPLETE,
    /** A prefix-cache hit reads only pages that were cached (complete) and not evicted or cleared since. */
    HIT_ONLY_CACHED_PAGES,
    /** A job drops every reference it took, the pages it took from the prefix cache included. */
    CACHE_REFERENCES_DROPPED
}
