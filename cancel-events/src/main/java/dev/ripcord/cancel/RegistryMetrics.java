package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import java.util.EnumMap;
import java.util.Map;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;

/** The registry's meters, all created up front so the hot path only increments. */
final class RegistryMetrics {

    private final Map<CancelSource, Counter> aborts = new EnumMap<>(CancelSource.class);
    private final Counter abortFailures;
    private final Counter registered;
    private final Counter completedNormally;
    private final Counter completedAfterAbort;
    private final Counter tombstonesCreated;
    private final Counter tombstonesHit;
    private final Counter evictedExpired;
    private final Counter evictedSize;

    RegistryMetrics(MeterRegistry meters, CancellationRegistry registry) {
        // No registry given: a composite with no children hands out no-op meters.
        MeterRegistry m = meters != null ? meters : new CompositeMeterRegistry();
        for (CancelSource source : CancelSource.values()) {
            aborts.put(source, Counter.builder("ripcord.cancel.aborts")
                    .description("Requests aborted, by the source of the winning signal")
                    .tag("source", source.name().toLowerCase())
                    .register(m));
        }
        abortFailures = Counter.builder("ripcord.cancel.abort.failures")
                .description("Abort handlers that threw").register(m);
        registered = Counter.builder("ripcord.cancel.registrations.created")
                .description("Requests registered").register(m);
        completedNormally = Counter.builder("ripcord.cancel.registrations.completed")
                .description("Registrations completed").tag("outcome", "normal").register(m);
        completedAfterAbort = Counter.builder("ripcord.cancel.registrations.completed")
                .description("Registrations completed").tag("outcome", "aborted").register(m);
        tombstonesCreated = Counter.builder("ripcord.cancel.tombstones.created")
                .description("Cancels kept as tombstones").register(m);
        tombstonesHit = Counter.builder("ripcord.cancel.tombstones.hit")
                .description("Registrations aborted at once because a tombstone was waiting").register(m);
        evictedExpired = Counter.builder("ripcord.cancel.tombstones.evicted")
                .description("Tombstones dropped").tag("cause", "expired").register(m);
        evictedSize = Counter.builder("ripcord.cancel.tombstones.evicted")
                .description("Tombstones dropped").tag("cause", "size").register(m);
        Gauge.builder("ripcord.cancel.registrations.live", registry, CancellationRegistry::liveRegistrations)
                .description("Registrations not yet completed").register(m);
        Gauge.builder("ripcord.cancel.tombstones.live", registry, CancellationRegistry::tombstones)
                .description("Tombstones held").register(m);
    }

    void aborted(CancelSource source) {
        aborts.get(source).increment();
    }

    void abortFailed() {
        abortFailures.increment();
    }

    void registered() {
        registered.increment();
    }

    void completed(boolean normally) {
        (normally ? completedNormally : completedAfterAbort).increment();
    }

    void tombstoneCreated() {
        tombstonesCreated.increment();
    }

    void tombstoneHit() {
        tombstonesHit.increment();
    }

    void evicted(boolean expired) {
        (expired ? evictedExpired : evictedSize).increment();
    }
}
