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
    /**
     * The gateway wrote a terminal frame to the client ({@code detail}: {@code done}, a stream's {@code [DONE]},
     * after an error event or not; {@code body}, a non-streamed answer's body). Emitted by the writer once per terminal
     * frame it writes, so that two frames written for one request show as two events, whatever {@code FINISHED} says.
     */
    TERMINAL_FRAME,

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
    /**
     * The worker's cancellation registry delivered a cancel to the job ({@code reason}, {@code source}: in band,
     * Kafka, a tombstone at admission, the other worker, shutdown), before the worker acts on it; {@code detail}: the
     * job's state then ({@code WAITING}, {@code RUNNING}, or a terminal one when it had ended already). A job that was
     * not yet ended when it received its cancel must observe it ({@code CANCEL_OBSERVED}) after this event.
     */
    CANCEL_RECEIVED,
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
    /**
     * The job's pages went back to the engine's pool ({@code pages} when known: the references it dropped, pages it
     * took from the prefix cache included).
     */
    PAGES_FREED,

    // ---- the prefill worker's prefix cache
    /**
     * Prefill took the prompt's first pages from its prefix cache at the start ({@code pages}, {@code tokens}:
     * prompt tokens not computed; {@code detail}: the hex key of the last page it took).
     */
    PREFIX_HIT,
    /**
     * After a completed chunk, the job's complete pages stand in the prefix cache up to {@code pages} ({@code tokens}:
     * the positions they hold; {@code chunk}: the chunk that completed them; {@code detail}: the hex keys of the pages
     * new since the job's last such event, space-separated).
     */
    PAGES_CACHED,

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
    HEARTBEAT,

    // ---- the prefill worker's prefix cache, not about one request
    /**
     * Not about a request: cached pages left the prefix cache, evicted for a page a request needed or beyond the
     * cache's size ({@code pages}; {@code detail}: their hex keys, space-separated). Its {@code requestId} is null.
     */
    PAGES_EVICTED,
    /**
     * Not about a request: the prefix cache is empty: the worker started, or an operator cleared it. Its
     * {@code requestId} is null.
     */
    PREFIX_CACHE_CLEARED;

    /**
     * Whether this type is about the process, not a request (its {@code requestId} is null): the publisher's markers
     * and the prefix cache's process-wide events.
     */
    public boolean isMarker() {
        return this == DROPPED || this == STOPPED || this == HEARTBEAT || this == PAGES_EVICTED
                || this == PREFIX_CACHE_CLEARED;
    }
}
