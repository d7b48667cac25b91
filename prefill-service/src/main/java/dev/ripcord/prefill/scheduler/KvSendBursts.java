package dev.ripcord.prefill.scheduler;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * The KV transfer's rate while it is moving data, as the service drives it: one burst is the pages one chunk
 * finished, from being handed to the send session to all of them acknowledged by decode. Recorded only when every
 * send of the burst succeeded: {@code ripcord.prefill.kv.send.time} (the burst's wall time) and
 * {@code ripcord.prefill.kv.send.bytes} (its bytes), so {@code Δ bytes_sum / Δ time_sum} is bytes per second of
 * transfer, without the time the session waits for the engine's next chunk. Bursts of concurrently running prompts
 * may overlap; their times then add up and the rate reads low, never high.
 */
final class KvSendBursts {

    private final Timer time;
    private final DistributionSummary bytes;
    private final LongSupplier nanoTicker;

    KvSendBursts(MeterRegistry meters, LongSupplier nanoTicker) {
        this.nanoTicker = nanoTicker;
        this.time = Timer.builder("ripcord.prefill.kv.send.time")
                .description("pages one prefill chunk finished: handed to the KV send session -> all acknowledged")
                .register(meters);
        this.bytes = DistributionSummary.builder("ripcord.prefill.kv.send.bytes")
                .description("bytes of those pages (one sample per acknowledged burst)")
                .baseUnit("bytes")
                .register(meters);
    }

    /** Starts a burst now; call before handing its pages to the session. */
    Burst start() {
        return new Burst(nanoTicker.getAsLong());
    }

    /** The pages of one chunk on their way. */
    final class Burst {

        private final long startNanos;

        private Burst(long startNanos) {
            this.startNanos = startNanos;
        }

        /** Records the burst once every one of {@code sends} ({@code sentBytes} in all) succeeded; nothing if one failed. */
        void whenAcknowledged(List<CompletableFuture<Void>> sends, long sentBytes) {
            if (sends.isEmpty()) {
                return;
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).whenComplete((ignored, error) -> {
                if (error == null) {
                    time.record(nanoTicker.getAsLong() - startNanos, TimeUnit.NANOSECONDS);
                    bytes.record(sentBytes);
                }
            });
        }
    }
}
