package dev.ripcord.cancel;

/** What one {@link CancellationRegistry#cancel} call did. Every outcome other than {@link #ABORTED} changed nothing that
 * a caller can observe except, for {@link #TOMBSTONED}, the tombstone table. */
public enum CancelOutcome {
    /** The request was live and this call aborted it: its {@link AbortHandler} ran, on this thread, before return. */
    ABORTED,
    /** The request (or its tombstone) was already cancelled by an earlier signal. A replay; nothing changed. */
    ALREADY_CANCELLED,
    /**
     * No request with this ID was registered: the cancel is kept as a tombstone so that a registration arriving later
     * aborts at once. Also the outcome for a cancel arriving after the request completed normally (the registry does
     * not remember completed IDs, see {@link CancellationRegistry}).
     */
    TOMBSTONED,
    /** The request was completing at the same moment; the cancel lost the race and nothing was aborted. */
    COMPLETED,
    /**
     * No request with this ID was registered and the cancel was published longer than the tombstone TTL ago (a replay
     * of old history): nothing was kept, nothing changed.
     */
    EXPIRED
}
