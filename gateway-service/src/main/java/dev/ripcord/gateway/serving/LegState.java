package dev.ripcord.gateway.serving;

/**
 * Where one attempt of a leg (one HTTP exchange with one worker instance) stands. Admission is the retry boundary:
 * only a failure in {@link #CONNECTING} may be retried; from {@link #ADMITTED} on, the worker holds the request
 * and a failure is reported to the client, never retried (a retry could duplicate work).
 *
 * <pre>
 *  from \ to    ADMITTED  STREAMING  ENDED
 *  CONNECTING      ✓                   ✓     first event arrived / failed, timed out or cancelled before it
 *  ADMITTED                  ✓         ✓     a second event arrived / the leg ended
 *  STREAMING                           ✓     the leg ended (completed, failed or cancelled)
 *  ENDED: terminal
 * </pre>
 *
 * <ul>
 *   <li>CONNECTING — routed to an instance; connecting, sending, waiting for the worker's first event (decode
 *       {@code RESERVED}, prefill {@code QUEUED}) under the admission timeout.</li>
 *   <li>ADMITTED — the first event arrived: the worker registered the request. No timer runs on the leg any more.</li>
 *   <li>STREAMING — later events are flowing.</li>
 *   <li>ENDED — the exchange is over; the instance's bulkhead slot is given back.</li>
 * </ul>
 */
public enum LegState {
    CONNECTING, ADMITTED, STREAMING, ENDED;

    /** Whether a failure in this state may be retried: only before the worker admitted the request. */
    public boolean beforeAdmission() {
        return this == CONNECTING;
    }

    /** Checks the transition {@code this → to} against the table above; throws if it is not in it. */
    LegState moveTo(LegState to) {
        boolean legal = switch (this) {
            case CONNECTING -> to == ADMITTED || to == ENDED;
            case ADMITTED -> to == STREAMING || to == ENDED;
            case STREAMING -> to == ENDED;
            case ENDED -> false;
        };
        if (!legal) {
            throw new IllegalStateException("leg cannot move from " + this + " to " + to);
        }
        return to;
    }
}
