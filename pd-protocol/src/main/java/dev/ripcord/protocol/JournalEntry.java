package dev.ripcord.protocol;

/**
 * One line of a worker's scheduler journal ({@code GET /internal/v1/journal}): what happened to which request, in
 * the order it happened. Tests read it to prove orderings (the short request's prefill started before any further
 * chunk of the cancelled long one) without ever looking at a clock.
 *
 * @param seq       position in the worker's journal, from 1, gap-free
 * @param requestId the request
 * @param event     what happened, e.g. {@code QUEUED}, {@code STARTED}, {@code CHUNK}, {@code CANCEL_OBSERVED},
 *                  {@code STOPPED}, {@code DONE}, {@code RESERVED}, {@code KV_LANDED}, {@code TOKEN},
 *                  {@code FINISHED}, {@code FREED}
 * @param detail    event-specific: the chunk index, the cancel's reason and path, ...
 * @param atMicros  wall-clock time of the entry in microseconds since the epoch: for benchmarks that line up the
 *                  hops of one request across the processes of one host (the gateway bench's per-hop breakdown).
 *                  Orderings are {@code seq}'s to prove, never this clock's.
 */
public record JournalEntry(long seq, String requestId, String event, String detail, long atMicros) {

    /** Now, in microseconds since the epoch (the resolution {@link java.time.Instant#now()} has on Linux). */
    public static long nowMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
