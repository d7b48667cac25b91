package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

/**
 * A cancel for an ID that has no live registration: either it arrived before the request was registered, or the
 * request was aborted and has since completed (kept so that replays of its cancel stay no-ops). Immutable.
 * Deliberately compared by identity, not by value: eviction removes a tombstone from the map only if the map still
 * holds this very instance ({@code ConcurrentHashMap.remove(key, value)}).
 */
final class Tombstone implements Slot {

    final String requestId;
    final CancelReason reason;
    final CancelSource source;
    final long createdNanos;

    Tombstone(String requestId, CancelReason reason, CancelSource source, long createdNanos) {
        this.requestId = requestId;
        this.reason = reason;
        this.source = source;
        this.createdNanos = createdNanos;
    }

    boolean isExpired(long nowNanos, long ttlNanos) {
        return nowNanos - createdNanos >= ttlNanos;
    }

    @Override
    public String toString() {
        return "Tombstone[requestId=" + requestId + ", reason=" + reason + ", source=" + source + "]";
    }
}
