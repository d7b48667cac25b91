package dev.ripcord.kv;

/**
 * Told about every transfer session of a {@link TransferAgent}: opened, and each state it enters (see
 * {@link SessionState}). The hook through which a worker records sessions in its lifecycle log without this library
 * knowing about Kafka. Called on the thread that caused the change, sometimes under the session's lock: it must be
 * quick, must not block and must not call back into the session.
 */
@FunctionalInterface
public interface SessionListener {

    /** Listens to nothing. */
    SessionListener NONE = (requestId, side, state, bytes) -> { };

    /**
     * @param requestId the session's request
     * @param side      {@link Side#SENDER} (a {@link SendSession}) or {@link Side#RECEIVER} (a {@link ReceiveSession})
     * @param state     {@link SessionState#OPEN} when the session is opened, then each state it enters
     * @param bytes     bytes the session has moved so far (received, or acknowledged by the receiver)
     */
    void onSession(String requestId, Side side, SessionState state, long bytes);
}
