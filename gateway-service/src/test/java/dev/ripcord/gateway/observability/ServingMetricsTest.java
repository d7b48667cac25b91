package dev.ripcord.gateway.observability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.gateway.generation.RequestOutcome.FinishReason;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/**
 * The gateway's vLLM-named request metrics, recorded in process: counts, bucket counts and gauges, without a
 * server. The same meters through the real application and its Prometheus scrape are in
 * {@link RequestObservabilityTest}; on a real stack in local-stack's {@code ServingMetricsIT}.
 */
class ServingMetricsTest {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final ServingMetrics metrics = new ServingMetrics(meters, 256);

    private static GenerationRequest request(int promptTokens) {
        return new GenerationRequest("req-1", "m", new int[promptTokens], 16, 0, 1, OptionalLong.empty(), List.of(),
                false, false, false, null, null, GenerationRequest.Kind.COMPLETION);
    }

    @Test
    void oneGenerationFeedsTtftInterTokenLatencyAndTheTokenCounters() {
        ServingMetrics.Generation generation = metrics.started(request(7));
        assertThat(gauge("ripcord.num.requests.waiting")).isEqualTo(1);
        assertThat(gauge("ripcord.num.requests.running")).isZero();

        generation.token();
        assertThat(gauge("ripcord.num.requests.waiting")).isZero();
        assertThat(gauge("ripcord.num.requests.running")).isEqualTo(1);
        generation.token();
        generation.token();
        generation.ended();

        assertThat(timer("ripcord.time.to.first.token").count()).isEqualTo(1);
        assertThat(timer("ripcord.inter.token.latency").count()).as("3 tokens, 2 gaps").isEqualTo(2);
        assertThat(counter("ripcord.generation.tokens").count()).isEqualTo(3);
        assertThat(counter("ripcord.prompt.tokens").count()).isEqualTo(7);
        assertThat(gauge("ripcord.num.requests.waiting")).isZero();
        assertThat(gauge("ripcord.num.requests.running")).isZero();
    }

    @Test
    void aGenerationThatEndsBeforeItsFirstTokenRecordsNoTtftAndNoPromptTokens() {
        ServingMetrics.Generation generation = metrics.started(request(7));
        generation.ended();
        generation.ended(); // doFinally and a racing cancel: counted once

        assertThat(timer("ripcord.time.to.first.token").count()).isZero();
        assertThat(counter("ripcord.prompt.tokens").count()).isZero();
        assertThat(gauge("ripcord.num.requests.waiting")).isZero();
        assertThat(gauge("ripcord.num.requests.running")).isZero();
    }

    @Test
    void histogramsHaveVllmBucketBoundariesAndCountEachRecordingInTheRightBucket() {
        Timer ttft = timer("ripcord.time.to.first.token");
        ttft.record(30, TimeUnit.MILLISECONDS);
        assertThat(boundaries(ttft.takeSnapshot().histogramCounts())).startsWith(0.001, 0.005, 0.01, 0.02, 0.04)
                .endsWith(640.0, 2560.0);
        assertThat(countAt(ttft.takeSnapshot().histogramCounts(), 0.02)).isZero();
        assertThat(countAt(ttft.takeSnapshot().histogramCounts(), 0.04)).isEqualTo(1);
        assertThat(countAt(ttft.takeSnapshot().histogramCounts(), 2560.0)).isEqualTo(1);

        assertThat(boundaries(timer("ripcord.inter.token.latency").takeSnapshot().histogramCounts()))
                .contains(0.001, 0.01, 0.025, 0.05, 0.075, 0.1, 80.0);
        assertThat(boundaries(timer("ripcord.e2e.request.latency").takeSnapshot().histogramCounts()))
                .contains(0.3, 0.5, 0.8, 1.0, 7680.0);
    }

    @Test
    void outcomesAreCountedByFinishReasonAndErrorCodeWithTheirPerRequestHistograms() {
        metrics.finished(new RequestOutcome(request(7), FinishReason.LENGTH, RequestOutcome.NO_ERROR, 16, 1_000_000));
        metrics.finished(new RequestOutcome(request(30), FinishReason.STOP, RequestOutcome.NO_ERROR, 3, 1_000_000));
        metrics.finished(new RequestOutcome(request(7), FinishReason.ABORT, "request_cancelled", 0, 1_000_000));
        metrics.finished(new RequestOutcome(request(7), FinishReason.ABORT, RequestOutcome.NO_ERROR, 2, 1_000_000));
        metrics.finished(new RequestOutcome(request(7), FinishReason.ERROR, "service_unavailable", 0, 1_000_000));

        assertThat(outcomes("length", "none")).isEqualTo(1);
        assertThat(outcomes("stop", "none")).isEqualTo(1);
        assertThat(outcomes("abort", "request_cancelled")).isEqualTo(1);
        assertThat(outcomes("abort", "none")).isEqualTo(1);
        assertThat(outcomes("error", "service_unavailable")).isEqualTo(1);
        assertThat(timer("ripcord.e2e.request.latency").count()).isEqualTo(5);

        DistributionSummary prompt = meters.get("ripcord.request.prompt.tokens").summary();
        assertThat(prompt.count()).isEqualTo(5);
        assertThat(boundaries(prompt.takeSnapshot().histogramCounts()))
                .containsExactly(1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0);
        assertThat(countAt(prompt.takeSnapshot().histogramCounts(), 5.0)).isZero();
        assertThat(countAt(prompt.takeSnapshot().histogramCounts(), 10.0)).isEqualTo(4);
        assertThat(countAt(prompt.takeSnapshot().histogramCounts(), 50.0)).isEqualTo(5);
        DistributionSummary generated = meters.get("ripcord.request.generation.tokens").summary();
        assertThat(generated.totalAmount()).isEqualTo(21);
        assertThat(countAt(generated.takeSnapshot().histogramCounts(), 1.0)).as("the two with 0 tokens").isEqualTo(2);
    }

    @Test
    void tokenBucketsAreOneTwoFiveUpToTheContextLength() {
        assertThat(ServingMetrics.oneTwoFive(2048)).containsExactly(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000);
        assertThat(ServingMetrics.oneTwoFive(1)).containsExactly(1);
    }

    /**
     * Regression guard: a cancel racing the first token (the end from one thread, the token from another) must
     * leave both gauges at zero, whichever wins; a check-then-act version counted the request twice.
     */
    @Test
    void aCancelRacingTheFirstTokenLeavesBothGaugesAtZero() throws Exception {
        int rounds = 2_000;
        try (ExecutorService threads = Executors.newFixedThreadPool(2)) {
            for (int i = 0; i < rounds; i++) {
                ServingMetrics.Generation generation = metrics.started(request(3));
                CyclicBarrier start = new CyclicBarrier(2);
                Future<?> token = threads.submit(() -> {
                    start.await();
                    generation.token();
                    return null;
                });
                Future<?> end = threads.submit(() -> {
                    start.await();
                    generation.ended();
                    return null;
                });
                token.get();
                end.get();
            }
        }
        assertThat(gauge("ripcord.num.requests.waiting")).isZero();
        assertThat(gauge("ripcord.num.requests.running")).isZero();
        assertThat(timer("ripcord.time.to.first.token").count()).isEqualTo(rounds);
    }

    private double gauge(String name) {
        Gauge gauge = meters.get(name).gauge();
        return gauge.value();
    }

    private Timer timer(String name) {
        return meters.get(name).timer();
    }

    private Counter counter(String name) {
        return meters.get(name).counter();
    }

    private double outcomes(String reason, String code) {
        return meters.get("ripcord.request.success").tag("finished_reason", reason).tag("error_code", code).counter()
                .count();
    }

    /** Upper bounds: seconds for a timer's buckets (kept in nanoseconds), tokens for a summary's. */
    private static double[] boundaries(CountAtBucket[] buckets) {
        double[] out = new double[buckets.length];
        for (int i = 0; i < buckets.length; i++) {
            out[i] = bound(buckets, i);
        }
        return out;
    }

    private static double bound(CountAtBucket[] buckets, int i) {
        boolean timer = buckets[buckets.length - 1].bucket() > 1e9; // the largest bound is >= 80 s in nanoseconds
        return timer ? buckets[i].bucket(TimeUnit.SECONDS) : buckets[i].bucket();
    }

    /** The cumulative count at the bucket whose upper bound is {@code bound} (seconds or tokens). */
    private static double countAt(CountAtBucket[] buckets, double bound) {
        for (int i = 0; i < buckets.length; i++) {
            if (Math.abs(bound(buckets, i) - bound) < 1e-9) {
                return buckets[i].count();
            }
        }
        throw new AssertionError("no bucket at " + bound);
    }
}
