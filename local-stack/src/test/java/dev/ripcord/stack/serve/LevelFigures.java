package dev.ripcord.stack.serve;

import java.util.Arrays;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The figures of one target at one level, over every round: counts summed; output tokens/s the median of the
 * rounds' (each the completed requests' tokens over that phase's wall time); latencies the percentiles of every
 * round's samples together, in milliseconds (NaN when no request completed).
 */
record LevelFigures(String target, int concurrency, int rounds, int requests, int completed, int failed,
                    SortedMap<String, Integer> failures, int left, long tokens, double tokensPerSecond,
                    double ttftP50, double ttftP99, double itlP50, double itlP99, double e2eP50) {

    static LevelFigures of(String target, int concurrency, List<PhaseResult> rounds) {
        SortedMap<String, Integer> failures = new TreeMap<>();
        rounds.forEach(r -> r.failures().forEach((kind, n) -> failures.merge(kind, n, Integer::sum)));
        long[] ttft = pooled(rounds, PhaseResult::ttftNanos);
        long[] itl = pooled(rounds, PhaseResult::itlNanos);
        long[] e2e = pooled(rounds, PhaseResult::e2eNanos);
        return new LevelFigures(target, concurrency, rounds.size(),
                rounds.stream().mapToInt(PhaseResult::requests).sum(),
                rounds.stream().mapToInt(PhaseResult::completed).sum(),
                rounds.stream().mapToInt(PhaseResult::failed).sum(), failures,
                rounds.stream().mapToInt(PhaseResult::left).sum(),
                rounds.stream().mapToLong(PhaseResult::tokens).sum(),
                Stats.median(rounds.stream().mapToDouble(PhaseResult::tokensPerSecond).toArray()),
                ms(Stats.percentile(ttft, 50)), ms(Stats.percentile(ttft, 99)),
                ms(Stats.percentile(itl, 50)), ms(Stats.percentile(itl, 99)), ms(Stats.percentile(e2e, 50)));
    }

    private static long[] pooled(List<PhaseResult> rounds, Function<PhaseResult, long[]> samples) {
        return rounds.stream().flatMapToLong(r -> Arrays.stream(samples.apply(r))).sorted().toArray();
    }

    private static double ms(double nanos) {
        return nanos / 1e6;
    }
}
