package dev.ripcord.engine;

/**
 * A snapshot of an engine's prefix cache, for metrics and status.
 *
 * @param enabled         whether the cache keeps pages ({@link EngineOptions#prefixCachePages()} above 0)
 * @param queriedTokens   prompt tokens looked up ({@link InferenceEngine#reusePrefix}), vLLM's
 *                        {@code prefix_cache_queries}
 * @param hitTokens       prompt tokens found, vLLM's {@code prefix_cache_hits}
 * @param pagesCached     pages in the cache, held by requests or not
 * @param pagesEvictable  cached pages no request holds
 * @param evictions       cached pages evicted so far
 */
public record PrefixCacheStats(boolean enabled, long queriedTokens, long hitTokens, int pagesCached,
                               int pagesEvictable, long evictions) {

    /** Hit tokens over queried tokens, 0 before any query. */
    public double hitRate() {
        return queriedTokens == 0 ? 0 : (double) hitTokens / queriedTokens;
    }
}
