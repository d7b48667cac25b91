package dev.ripcord.kv;

/**
 * What an agent holds right now; all zero after a clean shutdown of every request.
 *
 * @param liveRegions       regions registered or allocated and not yet released
 * @param liveRegionBytes   their total size
 * @param liveSessions      send and receive sessions not yet RELEASED
 * @param liveSessionBytes  total bytes those sessions may move (receive: target bytes; send: descriptor total)
 * @param connections       open connections, both directions
 */
public record TransferStats(long liveRegions, long liveRegionBytes, long liveSessions, long liveSessionBytes,
                            long connections) {
}
