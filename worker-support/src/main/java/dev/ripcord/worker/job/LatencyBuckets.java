package dev.ripcord.worker.job;

import java.time.Duration;
import java.util.Arrays;

/**
 * Bucket boundaries of the workers' request-phase histograms ({@code ripcord.request.queue.time},
 * {@code ripcord.request.prefill.time}, {@code ripcord.request.decode.time}): vLLM's {@code request_latency_buckets}
 * (0.3 s to 7680 s), so that a vLLM dashboard's {@code histogram_quantile} reads the same boundaries, with eight
 * finer ones below 0.3 s added, since a CPU engine serving a small model spends milliseconds in each phase.
 * The gateway's end-to-end histogram uses the same set (its own copy: the gateway does not depend on this module).
 */
public final class LatencyBuckets {

    private static final double[] SECONDS = {
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, // below vLLM's first boundary
            0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
            960.0, 1920.0, 7680.0};

    private LatencyBuckets() {
    }

    /** The boundaries, as Micrometer service-level objectives (each one a {@code _bucket} series). */
    public static Duration[] requestLatency() {
        return Arrays.stream(SECONDS).mapToObj(s -> Duration.ofNanos(Math.round(s * 1e9))).toArray(Duration[]::new);
    }
}
