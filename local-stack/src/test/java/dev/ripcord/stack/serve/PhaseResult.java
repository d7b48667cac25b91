package dev.ripcord.stack.serve;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.stream.LongStream;

/**
 * One target at one level in one round: what its requests did, and the phase's wall time (first request sent to
 * last answer ended).
 *
 * @param failures   failed requests by kind
 * @param tokens     output tokens of the completed requests
 * @param ttftNanos  sorted, completed requests
 * @param itlNanos   sorted, every gap between text events of the completed requests
 * @param e2eNanos   sorted, completed requests
 */
record PhaseResult(int requests, int completed, int left, SortedMap<String, Integer> failures, long tokens,
                   long wallNanos, long[] ttftNanos, long[] itlNanos, long[] e2eNanos) {

    PhaseResult {
        failures = Collections.unmodifiableSortedMap(new TreeMap<>(failures));
    }

    static PhaseResult of(List<RequestResult> results, long wallNanos) {
        int completed = 0;
        int left = 0;
        long tokens = 0;
        SortedMap<String, Integer> failures = new TreeMap<>();
        for (RequestResult r : results) {
            switch (r.ending()) {
                case COMPLETED -> {
                    completed++;
                    tokens += r.tokens();
                }
                case LEFT -> left++;
                case FAILED -> failures.merge(r.failure(), 1, Integer::sum);
            }
        }
        List<RequestResult> done = results.stream()
                .filter(r -> r.ending() == RequestResult.Ending.COMPLETED).toList();
        return new PhaseResult(results.size(), completed, left, failures, tokens, wallNanos,
                sorted(done.stream().mapToLong(RequestResult::ttftNanos).filter(t -> t >= 0)),
                sorted(done.stream().flatMapToLong(r -> Arrays.stream(r.itlNanos()))),
                sorted(done.stream().mapToLong(RequestResult::e2eNanos)));
    }

    int failed() {
        return failures.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** Completed requests' output tokens over the phase's wall time. */
    double tokensPerSecond() {
        return wallNanos <= 0 ? Double.NaN : tokens / (wallNanos / 1e9);
    }

    private static long[] sorted(LongStream values) {
        return values.sorted().toArray();
    }
}
