package dev.ripcord.engine;

/**
 * Told when the engine's prefix cache changes, so a worker can publish what it holds (a gateway routes by it).
 * Keys are the chained page keys the caller gave the engine ({@code dev.ripcord.protocol.prefix.PrefixKeys}).
 *
 * <p>Called after the change, outside the engine's locks, from whichever thread made the change; an
 * implementation must not block or compute (hand the event to a queue) and must not throw.
 */
public interface PrefixCacheListener {

    /** Pages whose KV is complete entered the cache under {@code keys}, in chain order (head first). */
    void stored(long[] keys);

    /** Pages under {@code keys} left the cache (evicted, or freed by an operator's clear). */
    void removed(long[] keys);

    /** The cache is empty: it started, or an operator cleared it. Everything published before is void. */
    void cleared();

    /** A listener that ignores every change. */
    PrefixCacheListener NONE = new PrefixCacheListener() {
        @Override
        public void stored(long[] keys) {
        }

        @Override
        public void removed(long[] keys) {
        }

        @Override
        public void cleared() {
        }
    };
}
