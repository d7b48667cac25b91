package dev.ripcord.stack.serve;

import java.util.Arrays;

/** The arithmetic of the serve bench's figures, kept apart so that tests can check it on exact inputs. */
final class Stats {

    private Stats() {
    }

    /**
     * The nearest-rank percentile {@code p} (0 < p <= 100) of {@code sorted}: the smallest value with at least
     * p % of the values at or below it; NaN for no values.
     */
    static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    /** The gaps between consecutive timestamps: the inter-token latencies of one stream's events. */
    static long[] gaps(long[] eventNanos) {
        if (eventNanos.length < 2) {
            return new long[0];
        }
        long[] gaps = new long[eventNanos.length - 1];
        for (int i = 1; i < eventNanos.length; i++) {
            gaps[i - 1] = eventNanos[i] - eventNanos[i - 1];
        }
        return gaps;
    }

    /** The median (the mean of the middle two for an even count); NaN for no values. */
    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }

    /** {@code value / base}; NaN when either is NaN or the base is 0. */
    static double ratio(double value, double base) {
        return Double.isNaN(value) || Double.isNaN(base) || base == 0 ? Double.NaN : value / base;
    }
}
