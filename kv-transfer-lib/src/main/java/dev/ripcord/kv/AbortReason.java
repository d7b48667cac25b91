package dev.ripcord.kv;

import java.util.Objects;

/**
 * Why a session was aborted, and which side decided it.
 *
 * @param cause  what happened
 * @param origin the side that decided the abort (for a lost peer: the surviving side that noticed)
 * @param detail free text for logs, e.g. the reason passed to {@code abort(String)}
 */
public record AbortReason(Cause cause, Side origin, String detail) {

    /** Stable causes; their ordinals travel on the wire. Append only. */
    public enum Cause {
        /** {@code abort(reason)} was called (client went away, request cancelled, ...). */
        REQUESTED,
        /** The connection to the peer closed (process killed, network lost). */
        PEER_LOST,
        /** The peer was silent for longer than the lease. */
        LEASE_EXPIRED,
        /** The peer could not be reached, or the descriptor names an agent that restarted. */
        PEER_UNREACHABLE,
        /** No sender attached to a receive session within the attach timeout. */
        ATTACH_TIMEOUT,
        /** The local or remote agent is closing. */
        AGENT_CLOSED,
        /** The receiver does not know the session (already released, or a stale descriptor). */
        UNKNOWN_SESSION,
        /** The peer broke the protocol (bad range, byte count mismatch, ...). */
        PROTOCOL_ERROR;

        static Cause ofWire(int ordinal) {
            Cause[] all = values();
            return ordinal >= 0 && ordinal < all.length ? all[ordinal] : PROTOCOL_ERROR;
        }
    }

    public AbortReason {
        Objects.requireNonNull(cause, "cause");
        Objects.requireNonNull(origin, "origin");
        detail = detail == null ? "" : detail;
    }

    /**
     * True for the everyday aborts (requested, agent shutdown, or the echo of an abort the peer already released):
     * logged at debug. Lost peers, lease expiries, timeouts and protocol errors are logged at info or above.
     */
    public boolean isRoutine() {
        return cause == Cause.REQUESTED || cause == Cause.AGENT_CLOSED || cause == Cause.UNKNOWN_SESSION;
    }

    @Override
    public String toString() {
        return cause + " by " + origin + (detail.isEmpty() ? "" : ": " + detail);
    }
}
