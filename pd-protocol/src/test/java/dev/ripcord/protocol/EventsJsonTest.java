package dev.ripcord.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** The worker events on the wire: one {@code type} field names the record; a cancel is never a failure. */
class EventsJsonTest {

    private final JsonMapper json = JsonMapper.builder().build();

    @Test
    void aCancelTravelsTypedAndDistinctFromAFailure() {
        String cancelled = json.writerFor(PrefillEvent.class)
                .writeValueAsString(new Cancelled(CancelReason.DEADLINE, CancelSource.KAFKA));
        assertThat(cancelled).contains("\"type\":\"CANCELLED\"", "\"reason\":\"DEADLINE\"", "\"source\":\"KAFKA\"");
        assertThat(json.readValue(cancelled, PrefillEvent.class))
                .isEqualTo(new Cancelled(CancelReason.DEADLINE, CancelSource.KAFKA));
        assertThat(json.readValue(cancelled, DecodeEvent.class))
                .isEqualTo(new Cancelled(CancelReason.DEADLINE, CancelSource.KAFKA));

        String failed = json.writerFor(DecodeEvent.class).writeValueAsString(new Failed(Failed.TRANSFER_FAILED, "x"));
        assertThat(json.readValue(failed, DecodeEvent.class)).isEqualTo(new Failed(Failed.TRANSFER_FAILED, "x"));
    }

    @Test
    void everyEventRoundTripsByItsTypeName() {
        for (PrefillEvent e : new PrefillEvent[] {new PrefillEvent.Queued(2), new PrefillEvent.Started(),
                new PrefillEvent.Chunk(1, 64), new PrefillEvent.Done(7)}) {
            assertThat(json.readValue(json.writerFor(PrefillEvent.class).writeValueAsString(e), PrefillEvent.class))
                    .isEqualTo(e);
        }
        for (DecodeEvent e : new DecodeEvent[] {new DecodeEvent.Reserved("d"), new DecodeEvent.Token(0, 5, null),
                new DecodeEvent.Token(3, 9, "length")}) {
            assertThat(json.readValue(json.writerFor(DecodeEvent.class).writeValueAsString(e), DecodeEvent.class))
                    .isEqualTo(e);
        }
    }

    @Test
    void aReasonOrSourceThisVersionDoesNotKnowReadsAsUnknown() {
        assertThat(json.readValue("{\"type\":\"CANCELLED\",\"reason\":\"SOLAR_FLARE\",\"source\":\"PIGEON\"}",
                DecodeEvent.class)).isEqualTo(new Cancelled(CancelReason.UNKNOWN, CancelSource.UNKNOWN));
    }
}
