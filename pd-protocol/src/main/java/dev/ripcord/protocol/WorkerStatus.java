package dev.ripcord.protocol;

/**
 * A worker's live state, as {@code GET /internal/v1/status} reports it. Tests use it to prove that nothing is
 * left behind: after every request has ended, everything but the counters of finished work is zero.
 *
 * @param role               {@code prefill} or {@code decode}
 * @param queued             requests admitted but not started (prefill's FIFO; decode: waiting for KV)
 * @param running            requests being computed (prefill: in chunked prefill; decode: in the batch)
 * @param livePages          KV pages allocated from the engine's pool
 * @param liveRegions        registered transfer regions (the engine page pool is one, for as long as it lives)
 * @param liveSessions       open transfer sessions
 * @param liveRegistrations  requests registered in the cancellation registry
 * @param aborts             aborts performed since start
 * @param chunksComputed     prefill chunks computed since start (prefill only)
 * @param pairing            the served model's identity and the engine's numeric definition, which a peer worker
 *                           must share ({@link Pairing})
 */
public record WorkerStatus(String role, int queued, int running, long livePages, long liveRegions,
                           long liveSessions, long liveRegistrations, long aborts, long chunksComputed,
                           Pairing pairing) {
}
