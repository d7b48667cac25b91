package dev.ripcord.lifecycle;

/**
 * What happened to a request, as one service saw it. Travels on the wire by {@link #name()}; a reader that meets a
 * name it does not know reports the record as foreign and skips it (see {@link LifecycleEventCodec}).
 *
 * <p>Which service emits which type, and which optional fields of {@link LifecycleEvent} it fills, is the table in
 * docs/lifecycles.md ("The lifecycle log").
 */
public enum LifecycleEventType {

    // ---- gateway
    /** The gateway accepted the request (it has an ID and a context). */
    ADMITTED,
    /** The gateway picked its workers: {@code prefillInstance} and {@code decodeInstance} (URLs or instance IDs). */
    ROUTED,
    /** The gateway answered: the request's one terminal outcome ({@code outcome}, {@code tokens}, {@code reason}). */
    FINISHED,

    // ---- both workers (a job)
    /** Prefill queued the job ({@code detail}: jobs ahead of it). */
    QUEUED,
    /** Decode admitted the job and reserved its pages ({@code pages}). */
    JOB_ADMITTED,
    /** Prefill started computing the prompt ({@code tokens}: prompt length). */
    STARTED,
    /** Prefill computed one chunk ({@code chunk}: index from 0, {@code tokens}: tokens in it). */
    CHUNK_DONE,
    /** Decode's KV arrived and the job joins the batch. */
    KV_LANDED,
    /** The worker observed the job's cancel ({@code reason}, {@code source}; decode: {@code step}, the last step started). */
    CANCEL_OBSERVED,
    /** Decode's job left the batch for its cancel ({@code step}: the step it took no part in; {@code tokens}: generated). */
    LEFT_BATCH,
    /**
     * The worker stopped the job for its cancel: the abort ({@code reason}, {@code source}, {@code detail}: phase;
     * prefill stopped inside a chunk: {@code chunk} and {@code layer}, the boundary where it stopped).
     */
    ABORTED,
    /** The job ended on the worker ({@code outcome}: COMPLETED or FAILED, {@code tokens}). */
    JOB_FINISHED,
    /** The job's pages went back to the engine's pool ({@code pages} when known). */
    PAGES_FREED,

    // ---- KV transfer sessions (either worker; {@code detail}: SENDER or RECEIVER)
    /** A transfer session was opened. */
    KV_OPENED,
    /** A transfer session was aborted ({@code reason}, {@code detail}). */
    KV_ABORTED,
    /** A transfer session's in-flight work drained: nothing can still read or write its memory. */
    KV_DRAINED,
    /** A transfer session was released ({@code bytes}: bytes it moved). */
    KV_RELEASED,

    // ---- the publisher itself
    /**
     * Not about a request: this instance's publisher dropped {@code dropped} events (queue full), with sequence numbers
     * {@code droppedFromSeq}..{@code droppedToSeq} (some of which may belong to other drops counted here). Its
     * {@code requestId} is null.
     */
    DROPPED,
    /**
     * Not about a request: this process's publisher closed at a clean stop (after a worker's drain), and this is its
     * incarnation's last event. An incarnation that ends without one and is followed by another of the same instance
     * died (a crash, SIGKILL): the audit counts what it left open as unverifiable, not as violations. Its
     * {@code requestId} is null.
     */
    STOPPED,
    /**
     * Not about a request: this process's high-water mark. Every {@code ripcord.lifecycle.heartbeat} in which the
     * process took a sequence number, its publisher emits one, with the next number: events lost after the last
     * event a reader saw (a lost tail) then show as a sequence gap before it. Its {@code requestId} is null.
     */
    HEARTBEAT;

    /** Whether this type is about the publisher, not a request (its {@code requestId} is null). */
    public boolean isMarker() {
        return this == DROPPED || this == STOPPED || this == HEARTBEAT;
    }
}
