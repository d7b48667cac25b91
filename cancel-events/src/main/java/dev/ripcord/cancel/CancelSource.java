package dev.ripcord.cancel;

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
    TOMBSTONE
}
