package dev.ripcord.cancel;

/**
 * Why a request was cancelled. Travels on the wire by {@link #name()}.
 *
 * <p>Adding a constant is a wire change: roll the new version out to every consumer before any producer sends it,
 * because a consumer that does not know a reason treats the record as poison (dead-letters it).
 */
public enum CancelReason {
    /** The client's connection went away (TCP reset, HTTP/2 stream reset, SSE client gone). */
    CLIENT_DISCONNECT,
    /** The client asked to cancel explicitly. */
    CLIENT_CANCEL,
    /** The request ran past its deadline. */
    DEADLINE,
    /** The process that owned the request is shutting down. */
    SHUTDOWN,
    /** Another leg of the request failed, so the rest of the work is useless. */
    UPSTREAM_ERROR,
    /**
     * The client stopped reading its stream: it accepted no bytes for the gateway's stall timeout
     * ({@code ripcord.gateway.openai.stream-stall-timeout}), so the gateway gave up on it.
     */
    CLIENT_STALLED
}
