package dev.ripcord.gateway.lifecycle;

import java.util.Locale;

/**
 * Where a request is in the disaggregated pipeline, as the gateway sees it from its legs' events. The names are the
 * {@code phase} labels of {@code ripcord_cancellations_total} at the workers, so a request's phase here and the
 * phase its cancel is counted in read the same.
 *
 * <pre>
 *  ADMISSION ─► QUEUED ─► PREFILL ─► TRANSFER ─► DECODE
 *  (forward only; a phase may be skipped, e.g. PREFILL ─► DECODE)
 * </pre>
 *
 * <ul>
 *   <li>{@link #ADMISSION}: waiting for a decode worker to reserve KV pages for the request.</li>
 *   <li>{@link #QUEUED}: the prefill worker queued the prompt.</li>
 *   <li>{@link #PREFILL}: the prefill worker is computing the prompt's chunks.</li>
 *   <li>{@link #TRANSFER}: prefill is done; the KV cache is on its way to decode, the first token is next.</li>
 *   <li>{@link #DECODE}: tokens are being generated and relayed.</li>
 * </ul>
 *
 * <p>Forward only: the prefill and decode legs are two connections, so their events may reach the gateway out of
 * order (prefill's {@code DONE} after decode's first token); a move back is not an error but is ignored
 * ({@link #canMoveTo}).
 */
public enum RequestPhase {
    ADMISSION, QUEUED, PREFILL, TRANSFER, DECODE;

    /** Whether a request in this phase may move to {@code next}: only forward. */
    public boolean canMoveTo(RequestPhase next) {
        return next.ordinal() > ordinal();
    }

    /** The name on the wire: {@code admission}, {@code queued}, ... */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
