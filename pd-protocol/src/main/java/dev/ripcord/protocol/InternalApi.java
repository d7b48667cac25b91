package dev.ripcord.protocol;

/**
 * Paths and headers of the internal API. Worker endpoints live under {@code /internal}, apart from actuator. The
 * request ID travels on every internal call in {@link RequestIds#HEADER}, as on the public API.
 */
public final class InternalApi {

    /** Reserve KV pages and stream the decoded tokens back: {@link DecodeRequest} in, {@link DecodeEvent}s out. */
    public static final String DECODE = "/internal/v1/decode";
    /** Run chunked prefill and push KV to decode: {@link PrefillRequest} in, {@link PrefillEvent}s out. */
    public static final String PREFILL = "/internal/v1/prefill";
    /** A worker's scheduler journal, oldest first: {@link JournalEntry}s; {@code ?after=N} for entries past N. */
    public static final String JOURNAL = "/internal/v1/journal";
    /**
     * The gateway's in-band cancel, sent before it closes a leg's stream so the worker learns the real reason:
     * {@code POST} with {@code ?reason=<CancelReason>}; the path variable is the request ID.
     */
    public static final String CANCEL = "/internal/v1/requests/{requestId}/cancel";
    /**
     * Start draining now: readiness drops and every new job is refused with 503 {@link Failed#DRAINING}; jobs in
     * flight go on. {@code POST}, or {@code GET} for a Kubernetes {@code preStop} {@code httpGet} hook (the only
     * method a hook has). Idempotent; the process keeps running until it is told to stop.
     */
    public static final String DRAIN = "/internal/v1/drain";
    /**
     * A worker's prefix cache: {@code GET} its figures (pages cached and evictable, prompt tokens looked up and
     * hit, evictions); {@code DELETE} empties it (an operator's clear: pages no request holds are freed at once,
     * and the worker publishes that its cache was cleared). Only a prefill worker fills its cache.
     */
    public static final String PREFIX_CACHE = "/internal/v1/prefix-cache";
    /** A worker's live state: {@link WorkerStatus}. */
    public static final String STATUS = "/internal/v1/status";
    /**
     * The internal credential: every call to a worker's {@code /internal/**} carries the shared token
     * ({@code ripcord.internal.token}) in this header; a worker answers 401 without it and 403 with a wrong one.
     */
    public static final String INTERNAL_TOKEN_HEADER = "X-Ripcord-Internal-Token";
    /** Media type of every internal stream. */
    public static final String NDJSON = "application/x-ndjson";

    private InternalApi() {
    }
}
