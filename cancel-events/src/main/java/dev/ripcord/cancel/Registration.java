package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelReason;

import java.util.Optional;

/**
 * The handle of one registered request, owned by whoever called {@link CancellationRegistry#register}. The owner must
 * {@link #complete()} (or {@link #close()}) it exactly when the request ends, whether it finished, failed or was
 * aborted: until then it counts as live, and a live registration at the end of a test is a leak.
 */
public interface Registration extends AutoCloseable {

    String requestId();

    /** Whether an abort has started (or finished) for this request; true from the moment a cancel won. */
    boolean isCancelled();

    /** The reason of the cancel that won, once {@link #isCancelled()}. */
    Optional<CancelReason> cancelReason();

    /**
     * Unregisters the request. Returns true when this call completed it normally, i.e. no cancel had won before;
     * false when it had been aborted (the ID then stays tombstoned, so replayed cancels stay no-ops) or when
     * completion already happened. Idempotent and safe from any thread, including from inside the abort handler.
     */
    boolean complete();

    /** Same as {@link #complete()}, for try-with-resources. */
    @Override
    default void close() {
        complete();
    }
}
