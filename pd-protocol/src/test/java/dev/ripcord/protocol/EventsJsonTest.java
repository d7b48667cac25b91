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
        assertThat(failed).doesNotContain("retryAfterSeconds");
        String busy = json.writerFor(PrefillEvent.class).writeValueAsString(new Failed(Failed.BUSY, "later", 7L));
        assertThat(json.readValue(busy, PrefillEvent.class)).isEqualTo(new Failed(Failed.BUSY, "later", 7L));
    }

    @Test
    void everyEventRoundTripsByItsTypeName() {
        for (PrefillEvent e : new PrefillEvent[] {new PrefillEvent.Queued(2), new PrefillEvent.Started(),
                new PrefillEvent.Chunk(1, 64), new PrefillEvent.Done(7)}) {
            assertThat(json.readValue(json.writerFor(PrefillEvent.class).writeValueAsString(e), PrefillEvent.class))
                    .isEqualTo(e);
        }
        for (DecodeEvent e : new DecodeEvent[] {new DecodeEvent.Reserved("d"), new DecodeEvent.Token(0, 5, null),
                new DecodeEvent.Token(3, 9, "length"),
                new DecodeEvent.Token(4, 2, null, new Logprobs(-0.5f, new int[] {2, 8}, new float[] {-0.5f, -1.25f}))}) {
            assertThat(json.readValue(json.writerFor(DecodeEvent.class).writeValueAsString(e), DecodeEvent.class))
                    .isEqualTo(e);
        }
    }

    @Test
    void aTokenWithoutLogprobsCarriesNoLogprobsField() {
        assertThat(json.writerFor(DecodeEvent.class).writeValueAsString(new DecodeEvent.Token(0, 5, null)))
                .doesNotContain("logprobs");
    }

    @Test
    void samplingKnobsAndLogprobRequestsTravelAndAbsentKnobsReadAsOff() {
        Sampling all = new Sampling(0.7, 0.9, 5L, 40, 0.05, 1.2, 0.5, -0.5, java.util.Map.of(17, -100.0, 3, 2.5), 3);
        DecodeRequest request = new DecodeRequest("r", 10, 4, all, true, new int[] {13, 17}, new int[] {1, 2});
        DecodeRequest back = json.readValue(json.writeValueAsString(request), DecodeRequest.class);
        assertThat(back.sampling()).isEqualTo(all);
        assertThat(back.stopTokenIds()).containsExactly(13, 17);
        assertThat(back.promptIds()).containsExactly(1, 2);
        assertThat(json.readValue("{\"temperature\":1.0,\"topP\":1.0,\"seed\":3}", Sampling.class))
                .isEqualTo(new Sampling(1.0, 1.0, 3L));
        assertThat(json.writeValueAsString(new Sampling(1.0, 1.0, 3L))).isEqualTo(
                "{\"temperature\":1.0,\"topP\":1.0,\"seed\":3}");
    }

    @Test
    void theFirstTokensMetadataCarriesItsLogprobsOnlyWhenAskedFor() {
        assertThat(TransferMetadata.encodeFirstToken(7, null)).hasSize(4);
        assertThat(TransferMetadata.decode(TransferMetadata.encodeFirstToken(7))).isEqualTo(
                new TransferMetadata.FirstToken(7, null));
        Logprobs lp = new Logprobs(-0.25f, new int[] {7, 1, 4}, new float[] {-0.25f, -2f, -3f});
        assertThat(TransferMetadata.decode(TransferMetadata.encodeFirstToken(7, lp))).isEqualTo(
                new TransferMetadata.FirstToken(7, lp));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TransferMetadata.decode(new byte[6]))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aReasonOrSourceThisVersionDoesNotKnowReadsAsUnknown() {
        assertThat(json.readValue("{\"type\":\"CANCELLED\",\"reason\":\"SOLAR_FLARE\",\"source\":\"PIGEON\"}",
                DecodeEvent.class)).isEqualTo(new Cancelled(CancelReason.UNKNOWN, CancelSource.UNKNOWN));
    }
}
