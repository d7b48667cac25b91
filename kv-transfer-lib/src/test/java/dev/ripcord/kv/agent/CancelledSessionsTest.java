package dev.ripcord.kv.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Side;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

/** The receiver's memory of sessions released after a cancel: bounded, oldest first out, token-checked. */
class CancelledSessionsTest {

    private static final AbortReason CANCEL = new AbortReason(AbortReason.Cause.REQUESTED, Side.RECEIVER, "cancelled",
            new AbortReason.Cancel(CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND));

    @Test
    void theOldestIsForgottenOnceCapacityIsExceeded() {
        CancelledSessions memory = new CancelledSessions();
        for (long id = 1; id <= CancelledSessions.CAPACITY; id++) {
            memory.released(id, id * 31, CANCEL);
        }
        assertThat(memory.refusal(1, 31)).as("full, nothing evicted yet").isEqualTo(CANCEL);

        memory.released(CancelledSessions.CAPACITY + 1, 7, CANCEL);

        assertThat(memory.refusal(1, 31)).as("the oldest, evicted").isNull();
        assertThat(memory.refusal(2, 62)).isEqualTo(CANCEL);
        assertThat(memory.refusal(CancelledSessions.CAPACITY + 1, 7)).isEqualTo(CANCEL);
    }

    @Test
    void onlyCancelsAreRememberedAndOnlyForTheirAttachToken() {
        CancelledSessions memory = new CancelledSessions();
        memory.released(1, 11, new AbortReason(AbortReason.Cause.ATTACH_TIMEOUT, Side.RECEIVER, "late"));
        memory.released(2, 22, null);
        memory.released(3, 33, CANCEL);

        assertThat(memory.refusal(1, 11)).isNull();
        assertThat(memory.refusal(2, 22)).isNull();
        assertThat(memory.refusal(3, 34)).as("a guessed session id is not enough").isNull();
        assertThat(memory.refusal(3, 33)).isEqualTo(CANCEL);
    }
}
