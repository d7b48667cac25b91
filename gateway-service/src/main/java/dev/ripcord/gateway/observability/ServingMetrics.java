package dev.ripcord.gateway.observability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * The gateway's request metrics with vLLM's names and meanings (docs/metrics.md has the two side by side), seen from
 * the client's side of the serving core:
 * <ul>
 *   <li>per token ({@link Generation}, from {@link MeteredTokenGenerator}): {@code ripcord.time.to.first.token},
 *       {@code ripcord.inter.token.latency}, {@code ripcord.prompt.tokens} (at the first token: prefill has computed
 *       the prompt), {@code ripcord.generation.tokens}, and the gauges {@code ripcord.num.requests.waiting}
 *       (started, no token yet) and {@code ripcord.num.requests.running} (tokens flowing);</li>
 *   <li>per request ({@link #finished}, from the OpenAI edge): {@code ripcord.request.success} by
 *       {@code finished_reason} and {@code error_code}, {@code ripcord.e2e.request.latency}, and the per-request
 *       token histograms {@code ripcord.request.prompt.tokens} and {@code ripcord.request.generation.tokens}.</li>
 * </ul>
 * Histograms have vLLM's bucket boundaries (with finer ones below vLLM's first where a CPU engine's small model is
 * faster), each a {@code _bucket} series. Recording is a handful of atomic adds; nothing blocks, so it runs on
 * event-loop threads. {@code model_name} is added to every {@code ripcord.*} meter by
 * {@link ObservabilityConfiguration#modelNameTag}.
 */
public final class ServingMetrics implements RequestOutcome.Listener {

    /** vLLM's TTFT boundaries. */
    private static final double[] TTFT_SECONDS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
            1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    /** vLLM's inter-token boundaries, with 1, 2.5 and 5 ms below its first (a small model decodes a token in ~2 ms). */
    private static final double[] ITL_SECONDS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
            0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
    /** vLLM's request-latency boundaries, with eight below its first (the workers' phase histograms use the same). */
    private static final double[] REQUEST_SECONDS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2,
            0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
            960.0, 1920.0, 7680.0};

    private final MeterRegistry meters;
    private final Timer timeToFirstToken;
    private final Timer interTokenLatency;
    private final Timer endToEnd;
    private final Counter promptTokens;
    private final Counter generationTokens;
    private final DistributionSummary requestPromptTokens;
    private final DistributionSummary requestGenerationTokens;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger running = new AtomicInteger();
    private final Map<String, Counter> outcomes = new ConcurrentHashMap<>();

    /**
     * @param contextLength the served model's context length: the largest per-request token bucket, as in vLLM
     *                      ({@code 1, 2, 5, 10, 20, 50, ...} up to it)
     */
    public ServingMetrics(MeterRegistry meters, int contextLength) {
        this.meters = meters;
        this.timeToFirstToken = Timer.builder("ripcord.time.to.first.token")
                .description("generation started -> first token relayed")
                .serviceLevelObjectives(durations(TTFT_SECONDS)).register(meters);
        this.interTokenLatency = Timer.builder("ripcord.inter.token.latency")
                .description("one token relayed -> the next one relayed")
                .serviceLevelObjectives(durations(ITL_SECONDS)).register(meters);
        this.endToEnd = Timer.builder("ripcord.e2e.request.latency")
                .description("generation started -> it ended, whatever the outcome")
                .serviceLevelObjectives(durations(REQUEST_SECONDS)).register(meters);
        this.promptTokens = Counter.builder("ripcord.prompt.tokens").baseUnit("tokens")
                .description("prompt tokens of requests whose prefill completed").register(meters);
        this.generationTokens = Counter.builder("ripcord.generation.tokens").baseUnit("tokens")
                .description("tokens relayed to clients").register(meters);
        double[] tokenBuckets = oneTwoFive(contextLength);
        this.requestPromptTokens = DistributionSummary.builder("ripcord.request.prompt.tokens")
                .description("prompt tokens per finished request").serviceLevelObjectives(tokenBuckets)
                .register(meters);
        this.requestGenerationTokens = DistributionSummary.builder("ripcord.request.generation.tokens")
                .description("tokens generated per finished request").serviceLevelObjectives(tokenBuckets)
                .register(meters);
        Gauge.builder("ripcord.num.requests.waiting", waiting, AtomicInteger::get)
                .description("generations started that have no token yet").register(meters);
        Gauge.builder("ripcord.num.requests.running", running, AtomicInteger::get)
                .description("generations whose tokens are flowing").register(meters);
    }

    /** Starts measuring one generation; the caller reports each token and the end. */
    Generation started(GenerationRequest request) {
        waiting.incrementAndGet();
        return new Generation(request.promptTokens().length);
    }

    /**
     * One generation's token timing, and its place in the waiting/running gauges: a state that moves
     * {@code WAITING -> RUNNING} at the first token and to {@code ENDED} once, by CAS, so that a cancel racing with
     * the first token leaves each gauge exactly where it was. Tokens arrive one at a time (Reactive Streams
     * serializes them), so the token timing itself needs no synchronization.
     */
    final class Generation {

        private static final int WAITING = 0;
        private static final int RUNNING = 1;
        private static final int ENDED = 2;

        private final int prompt;
        private final long startedNanos = System.nanoTime();
        private final AtomicInteger state = new AtomicInteger(WAITING);
        private boolean sawToken;
        private long lastNanos;

        private Generation(int prompt) {
            this.prompt = prompt;
        }

        void token() {
            long now = System.nanoTime();
            if (!sawToken) {
                sawToken = true;
                timeToFirstToken.record(now - startedNanos, TimeUnit.NANOSECONDS);
                promptTokens.increment(prompt);
                if (state.compareAndSet(WAITING, RUNNING)) {
                    waiting.decrementAndGet();
                    running.incrementAndGet();
                }
            } else {
                interTokenLatency.record(now - lastNanos, TimeUnit.NANOSECONDS);
            }
            lastNanos = now;
            generationTokens.increment();
        }

        /** The generation completed, failed or was cancelled; counted once, whichever comes first. */
        void ended() {
            int was = state.getAndSet(ENDED);
            if (was == WAITING) {
                waiting.decrementAndGet();
            } else if (was == RUNNING) {
                running.decrementAndGet();
            }
        }
    }

    @Override
    public void finished(RequestOutcome outcome) {
        String reason = outcome.finishReason().label();
        outcomes.computeIfAbsent(reason + '\n' + outcome.errorCode(), key -> Counter.builder("ripcord.request.success")
                        .description("generations ended, by finish reason and the error code the client received")
                        .tag("finished_reason", reason).tag("error_code", outcome.errorCode()).register(meters))
                .increment();
        endToEnd.record(outcome.elapsedNanos(), TimeUnit.NANOSECONDS);
        requestPromptTokens.record(outcome.request().promptTokens().length);
        requestGenerationTokens.record(outcome.completionTokens());
    }

    private static Duration[] durations(double[] seconds) {
        Duration[] out = new Duration[seconds.length];
        for (int i = 0; i < seconds.length; i++) {
            out[i] = Duration.ofNanos(Math.round(seconds[i] * 1e9));
        }
        return out;
    }

    /** vLLM's {@code build_1_2_5_buckets}: 1, 2, 5, 10, 20, 50, ... while at most {@code max}. */
    static double[] oneTwoFive(int max) {
        List<Double> buckets = new ArrayList<>();
        for (long exponent = 1; ; exponent *= 10) {
            for (int mantissa : new int[] {1, 2, 5}) {
                long value = mantissa * exponent;
                if (value > max) {
                    return buckets.stream().mapToDouble(Double::doubleValue).toArray();
                }
                buckets.add((double) value);
            }
        }
    }
}
