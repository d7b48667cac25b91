package dev.ripcord.lifecycle;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LifecycleEventCodecTest {

    private static final Instant T = Instant.parse("2026-12-01T12:00:00.123Z");

    @Test
    void everyFieldSurvivesTheRoundTrip() {
        LifecycleEvent event = LifecycleEvent.of(LifecycleEventType.ABORTED, "req-1")
                .withOutcome(LifecycleOutcome.CANCELLED).withCancel(CancelReason.DEADLINE, CancelSource.KAFKA)
                .withChunk(3).withLayer(5).withTokens(64).withStep(9).withBytes(4096).withPages(2).withRoute("p", "d")
                .withDetail("prefill").stamped("prefill", "p1", "0a1b2c3d4e5f6071", 17, T);

        assertThat(LifecycleEventCodec.decode(LifecycleEventCodec.encode(event))).isEqualTo(event);
    }

    @Test
    void aStoppedMarkerHasNoRequestIdAndIsReadBack() {
        // A reader that refused it would take every clean stop for a crash.
        LifecycleEvent marker = LifecycleEvent.of(LifecycleEventType.STOPPED, null)
                .stamped("gateway", "g1", "0a1b2c3d4e5f6071", 21, T);
        assertThat(LifecycleEventCodec.decode(LifecycleEventCodec.encode(marker))).isEqualTo(marker);
        assertThat(marker.key()).isEqualTo("instance:g1");
    }

    @Test
    void aDroppedMarkerHasNoRequestId() {
        LifecycleEvent marker = LifecycleEvent.of(LifecycleEventType.DROPPED, null).withDropped(5, 10, 14)
                .stamped("gateway", "g1", 20, T);
        assertThat(LifecycleEventCodec.decode(LifecycleEventCodec.encode(marker))).isEqualTo(marker);
    }

    @Test
    void absentFieldsAreOmittedOnTheWire() {
        String json = new String(LifecycleEventCodec.encode(LifecycleEvent.of(LifecycleEventType.ADMITTED, "req-1")
                .stamped("gateway", "g1", 1, T)), StandardCharsets.UTF_8);
        assertThat(json).isEqualTo("{\"schemaVersion\":1,\"requestId\":\"req-1\",\"service\":\"gateway\","
                + "\"instance\":\"g1\",\"seq\":1,\"timestamp\":\"2026-12-01T12:00:00.123Z\",\"type\":\"ADMITTED\"}");
    }

    @Test
    void corruptAndForeignRecordsAreRejectedWithAReason() {
        assertThatThrownBy(() -> LifecycleEventCodec.decode("garbage".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(InvalidLifecycleEventException.class).hasMessageStartingWith("not JSON");
        assertThatThrownBy(() -> LifecycleEventCodec.decode("{\"schemaVersion\":1,\"requestId\":\"r\","
                + "\"service\":\"s\",\"instance\":\"i\",\"seq\":1,\"timestamp\":\"2026-12-01T12:00:00Z\","
                + "\"type\":\"TELEPORTED\"}")).isInstanceOf(InvalidLifecycleEventException.class)
                .hasMessageContaining("unknown type 'TELEPORTED'");
        assertThatThrownBy(() -> LifecycleEventCodec.decode("{\"schemaVersion\":2}"))
                .isInstanceOf(InvalidLifecycleEventException.class).hasMessageContaining("schemaVersion 2");
        assertThatThrownBy(() -> LifecycleEventCodec.decode("{\"schemaVersion\":1,\"requestId\":\"x\","
                + "\"reason\":\"CLIENT_CANCEL\",\"origin\":{}}")).isInstanceOf(InvalidLifecycleEventException.class)
                .hasMessageContaining("missing required field 'type'");
    }
}
