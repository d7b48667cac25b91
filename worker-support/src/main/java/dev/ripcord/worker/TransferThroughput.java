package dev.ripcord.worker;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.ripcord.kv.Backend;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * The KV transfer's throughput in the services, per completed transfer and backend, from the sender's
 * {@link TransferClock}: {@code ripcord.kv.transfer.bytes} (distribution summary, bytes per request) and
 * {@code ripcord.kv.transfer.time} (timer, the transfer's busy wall time), both tagged {@code backend=tcp|shm}.
 * Their sums give the rate: {@code ripcord_kv_transfer_bytes_sum / ripcord_kv_transfer_time_seconds_sum} bytes per
 * second. Only transfers that completed are recorded.
 */
public final class TransferThroughput {

    private final Map<Backend, DistributionSummary> bytes = new EnumMap<>(Backend.class);
    private final Map<Backend, Timer> time = new EnumMap<>(Backend.class);

    public TransferThroughput(MeterRegistry meters) {
        for (Backend backend : new Backend[] {Backend.TCP, Backend.SHM}) {
            String tag = backend.name().toLowerCase(Locale.ROOT);
            bytes.put(backend, DistributionSummary.builder("ripcord.kv.transfer.bytes").baseUnit("bytes")
                    .tag("backend", tag).description("KV bytes of one completed transfer").register(meters));
            time.put(backend, Timer.builder("ripcord.kv.transfer.time").tag("backend", tag)
                    .description("wall time a completed KV transfer had writes in flight").register(meters));
        }
    }

    /** Records one completed transfer that went over {@code backend} (TCP or SHM, a send session's choice). */
    public void record(Backend backend, TransferClock clock) {
        if (!bytes.containsKey(backend)) {
            throw new IllegalArgumentException("a transfer goes over TCP or SHM, not " + backend);
        }
        bytes.get(backend).record(clock.bytes());
        time.get(backend).record(clock.busyNanos(), TimeUnit.NANOSECONDS);
    }
}
