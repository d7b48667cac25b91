package dev.ripcord.protocol;

import java.util.Objects;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonTypeName;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;

/**
 * A worker's last event when a cancel ended the job: the reason of the cancel that won and where the worker learned
 * it ({@code IN_BAND}, {@code KAFKA}, {@code TOMBSTONE}, {@code UPSTREAM}, ...). Distinct from {@link Failed}: a
 * cancel is the client's (or the gateway's) wish carried out, not a fault. A value this version does not know reads
 * as {@code UNKNOWN} rather than failing the stream.
 */
@JsonTypeName("CANCELLED")
public record Cancelled(CancelReason reason, CancelSource source) implements PrefillEvent, DecodeEvent {

    public Cancelled {
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(source, "source");
    }

    @JsonCreator
    static Cancelled fromJson(@JsonProperty("reason") String reason, @JsonProperty("source") String source) {
        return new Cancelled(CancelReason.fromWire(reason), CancelSource.fromWire(source));
    }
}
