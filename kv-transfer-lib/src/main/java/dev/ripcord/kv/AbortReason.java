package dev.ripcord.kv;

import java.util.Objects;
import java.util.Optional;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;

/**
 * Why a session was aborted, and which side decided it.
 *
 * @param cause  what happened
 * @param origin the side that decided the abort (for a lost peer: the surviving side that noticed)
 * @param detail free text for logs, e.g. the reason passed to {@code abort(String)}
 * @param cancel set when the abort carries out a request's cancel ({@code abort(CancelReason, CancelSource)}):
 *               why, and where the aborting side learned it. It travels typed in the ABORT frame, so the peer can
 *               tell a cancel from a failure without reading {@code detail}; null for every other abort
 */
public record AbortReason(Cause cause, Side origin, String detail, Cancel cancel) {

    /**
     * The cancel an abort carries out. On the wire each enum travels by name; a name this version does not know
     * reads as {@code UNKNOWN}, never as an error.
     */
    public record Cancel(CancelReason reason, CancelSource source) {
        public Cancel {
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(source, "source");
        }
    }

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

        /** The cause whose wire code (ordinal) is {@code ordinal}; PROTOCOL_ERROR for an unknown one. */
        public static Cause ofWire(int ordinal) {
            Cause[] all = values();
            return ordinal >= 0 && ordinal < all.length ? all[ordinal] : PROTOCOL_ERROR;
        }
    }

    public AbortReason {
        Objects.requireNonNull(cause, "cause");
        Objects.requireNonNull(origin, "origin");
        detail = detail == null ? "" : detail;
        if (cancel != null && cause != Cause.REQUESTED) {
            throw new IllegalArgumentException("only a REQUESTED abort carries a cancel, not " + cause);
        }
    }

    /** An abort that is not a request's cancel. */
    public AbortReason(Cause cause, Side origin, String detail) {
        this(cause, origin, detail, null);
    }

    /** The cancel this abort carries out, if it is one. */
    public Optional<Cancel> cancellation() {
        return Optional.ofNullable(cancel);
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
        return cause + " by " + origin + (cancel == null ? "" : " for cancel " + cancel.reason() + "/"
                + cancel.source()) + (detail.isEmpty() ? "" : ": " + detail);
    }
}
