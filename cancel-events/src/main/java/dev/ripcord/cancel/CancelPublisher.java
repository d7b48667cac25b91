package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelReason;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;

import dev.ripcord.protocol.RequestIds;

/**
 * Publishes cancellations to every service that consumes the cancellations topic.
 *
 * <p>Safe to call from a Netty event loop: no method blocks or performs I/O on the caller's thread (not even the
 * Kafka producer's metadata wait). The returned future completes normally once the broker has acknowledged the record
 * (after background retries, if a send failed), and exceptionally with {@link CancelPublishException} when the
 * publish was rejected (queue full, shutting down) or gave up after its retries. It completes on the library's
 * publisher thread: do not block in dependent stages; use the {@code *Async} variants with your own executor for
 * anything slow.
 */
public interface CancelPublisher {

    /** Publishes {@code event} with the request ID as record key. */
    CompletableFuture<Void> publish(CancelEvent event);

    /** Publishes a cancel for {@code requestId} originating from this process, timestamped now. */
    CompletableFuture<Void> publish(String requestId, CancelReason reason);

    /**
     * A publisher that drops everything and reports success at once, for {@code ripcord.cancel.propagation=in-band}
     * or {@code none}, and for tests that do not care. Still validates its arguments.
     */
    static CancelPublisher discarding() {
        return new CancelPublisher() {
            @Override
            public CompletableFuture<Void> publish(CancelEvent event) {
                Objects.requireNonNull(event, "event");
                return CompletableFuture.completedFuture(null);
            }

            @Override
            public CompletableFuture<Void> publish(String requestId, CancelReason reason) {
                RequestIds.require(requestId);
                Objects.requireNonNull(reason, "reason");
                return CompletableFuture.completedFuture(null);
            }
        };
    }
}
