package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Latencies of one hop (nearest-rank percentiles).
 *
 * @param count samples
 * @param p50   median
 * @param p99   99th percentile
 * @param max   largest
 */
public record LatencyStats(int count, Duration p50, Duration p99, Duration max) {

    static LatencyStats of(List<Duration> samples) {
        List<Duration> sorted = new ArrayList<>(samples);
        Collections.sort(sorted);
        if (sorted.isEmpty()) {
            return new LatencyStats(0, Duration.ZERO, Duration.ZERO, Duration.ZERO);
        }
        return new LatencyStats(sorted.size(), rank(sorted, 0.50), rank(sorted, 0.99), sorted.getLast());
    }

    private static Duration rank(List<Duration> sorted, double q) {
        int index = (int) Math.ceil(q * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }
}
