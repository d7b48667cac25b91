package dev.ripcord.engine;

/**
 * A snapshot of an engine's counters, for metrics.
 *
 * @param pagesTotal     pages in the KV pool
 * @param pagesLive      pages currently allocated
 * @param bytesLive      {@code pagesLive · pageBytes}
 * @param sequencesLive  sequences created and not yet freed
 * @param prefillChunks  prefill calls completed
 * @param prefillTokens  tokens computed by prefill
 * @param prefillNanos   wall time spent in prefill (stopped chunks included)
 * @param decodeSteps    decode steps completed
 * @param decodeTokens   tokens computed by decode (sum of batch sizes)
 * @param decodeNanos    wall time spent in decode (stopped steps included)
 * @param prefillStops   prefill chunks stopped at a layer boundary ({@link ComputeStoppedException}); not counted
 *                       in {@code prefillChunks} or {@code prefillTokens}, their time is in {@code prefillNanos}
 * @param decodeStops    decode steps stopped at a layer boundary; not counted in {@code decodeSteps}
 */
public record EngineStats(int pagesTotal, int pagesLive, long bytesLive, int sequencesLive,
                          long prefillChunks, long prefillTokens, long prefillNanos,
                          long decodeSteps, long decodeTokens, long decodeNanos,
                          long prefillStops, long decodeStops) {
}
