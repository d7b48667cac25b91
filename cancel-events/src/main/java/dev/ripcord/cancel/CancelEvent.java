package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelReason;

import java.time.Clock;
import java.time.Instant;
import java.util.Objects;

import dev.ripcord.protocol.RequestIds;

/**
 * "Request {@code requestId} is cancelled", as it travels on the cancellations topic: JSON (see
 * {@link CancelEventCodec}) with the request ID as the record key.
 *
 * @param requestId     the cancelled request, valid per {@link RequestIds}
 * @param reason        why
 * @param origin        the process that decided to cancel
 * @param timestamp     when it decided, by its clock
 * @param schemaVersion the wire schema version; this build writes and reads {@value #CURRENT_SCHEMA_VERSION}
 */
public record CancelEvent(String requestId, CancelReason reason, Origin origin, Instant timestamp, int schemaVersion) {

    public static final int CURRENT_SCHEMA_VERSION = 1;

    public CancelEvent {
        RequestIds.require(requestId);
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(origin, "origin");
        Objects.requireNonNull(timestamp, "timestamp");
        Checks.requireArgument(schemaVersion == CURRENT_SCHEMA_VERSION,
                "schemaVersion %d is not supported; this build speaks %d", schemaVersion, CURRENT_SCHEMA_VERSION);
    }

    public static CancelEvent of(String requestId, CancelReason reason, Origin origin, Instant timestamp) {
        return new CancelEvent(requestId, reason, origin, timestamp, CURRENT_SCHEMA_VERSION);
    }

    public static CancelEvent now(String requestId, CancelReason reason, Origin origin, Clock clock) {
        return of(requestId, reason, origin, clock.instant());
    }
}
