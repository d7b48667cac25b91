package dev.ripcord.protocol;

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
    CLIENT_STALLED,
    /**
     * The gateway has the whole answer before the workers finished it (a stop string matched in the text), so the
     * rest of the generation is not wanted. Neither a failure nor the client's doing: the request completed.
     */
    ANSWER_COMPLETE,
    /**
     * A worker's internal stream closed and nobody said why: the gateway vanished, the connection broke, or the
     * gateway closed a leg that was already over. Recorded as exactly that, never guessed to be a client's
     * disconnect. Only ever applied by the worker whose connection closed; never published.
     */
    CONNECTION_CLOSED,
    /**
     * A reason this version does not know, read from a peer that does (a KV abort frame or a worker event from a
     * newer version). Never sent; never published.
     */
    UNKNOWN;

    /**
     * The reason named {@code name}, or {@link #UNKNOWN} when this version does not know it (or {@code name} is
     * null): for the internal hops, where a newer peer must not make an older one crash. The Kafka codec is
     * stricter on purpose (it dead-letters an unknown reason).
     */
    public static CancelReason fromWire(String name) {
        if (name != null) {
            for (CancelReason r : values()) {
                if (r.name().equals(name)) {
                    return r;
                }
            }
        }
        return UNKNOWN;
    }
}
