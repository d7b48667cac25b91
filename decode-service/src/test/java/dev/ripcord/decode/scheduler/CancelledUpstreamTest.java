package dev.ripcord.decode.scheduler;

import java.util.concurrent.CompletionException;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.TransferAbortedException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Which transfer failures are a cancel that prefill passed on, and which are failures. */
class CancelledUpstreamTest {

    @Test
    void aSenderAbortForACancelIsThatCancel() {
        Throwable error = new CompletionException(new TransferAbortedException("r1",
                new AbortReason(AbortReason.Cause.REQUESTED, Side.SENDER, "cancelled: CLIENT_DISCONNECT via KAFKA")));

        assertThat(DecodeScheduler.CancelledUpstream.of(error))
                .isEqualTo(new DecodeScheduler.CancelledUpstream(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA));
    }

    @Test
    void otherAbortsAreFailures() {
        assertThat(DecodeScheduler.CancelledUpstream.of(new TransferAbortedException("r1",
                new AbortReason(AbortReason.Cause.REQUESTED, Side.SENDER, "prefill queue is full")))).isNull();
        assertThat(DecodeScheduler.CancelledUpstream.of(new TransferAbortedException("r1",
                new AbortReason(AbortReason.Cause.REQUESTED, Side.RECEIVER, "cancelled: SHUTDOWN via SHUTDOWN"))))
                .isNull();
        assertThat(DecodeScheduler.CancelledUpstream.of(new TransferAbortedException("r1",
                new AbortReason(AbortReason.Cause.REQUESTED, Side.SENDER, "cancelled: NOT_A_REASON via KAFKA"))))
                .isNull();
        assertThat(DecodeScheduler.CancelledUpstream.of(new IllegalStateException("boom"))).isNull();
    }
}
