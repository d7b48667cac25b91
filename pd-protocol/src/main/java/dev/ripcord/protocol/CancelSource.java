package dev.ripcord.protocol;

/** Where a cancellation signal reached the {@link CancellationRegistry} from. */
public enum CancelSource {
    /** A {@link CancelEvent} consumed from the cancellations topic. */
    KAFKA,
    /** In the request path itself: a header, a stream reset, a closed connection between services. */
    IN_BAND,
    /** A local deadline timer. */
    DEADLINE,
    /** Local shutdown, see {@link CancellationRegistry#cancelAll}. */
    SHUTDOWN,
    /** Application code called {@link CancellationRegistry#cancel} for its own reasons. */
    EXPLICIT,
    /**
     * Not a signal source but a replay of one: the cancel arrived before the request was registered and was kept as
     * a tombstone; {@link CancellationRegistry#register} found it. Only ever passed to an {@link AbortHandler}.
     */
    TOMBSTONE,
    /**
     * The previous hop of the request aborted its part for a cancel and said so in band (decode: prefill's typed
     * abort of the KV transfer). The reason is the one that hop applied; where that hop learned it from travels
     * alongside for the journal.
     */
    UPSTREAM,
    /** A source this version does not know, read from a newer peer. Never passed to {@link CancellationRegistry#cancel}. */
    UNKNOWN;

    /** The source named {@code name}, or {@link #UNKNOWN} when this version does not know it (or it is null). */
    public static CancelSource fromWire(String name) {
        if (name != null) {
            for (CancelSource s : values()) {
                if (s.name().equals(name)) {
                    return s;
                }
            }
        }
        return UNKNOWN;
    }
}
