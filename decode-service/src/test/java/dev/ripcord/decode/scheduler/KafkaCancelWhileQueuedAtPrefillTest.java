package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cancel.CancelOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.worker.job.JobState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Regression: with {@code ripcord.cancel.propagation=kafka}, a request cancelled while still QUEUED at
 * prefill ended its decode job FAILED, because prefill told decode about the cancel in free text that decode's
 * parser did not recognise (the queued variant of the message). The Kafka record reaches prefill first here; decode learns of
 * the cancel only from prefill's abort of the transfer, then gets its own copy of the record later.
 */
class KafkaCancelWhileQueuedAtPrefillTest {

    private TwoWorkers workers;

    @BeforeEach
    void start() {
        workers = new TwoWorkers();
    }

    @AfterEach
    void stop() {
        workers.close();
    }

    @Test
    void cancelWhileQueuedAtPrefillEndsDecodeCancelledNotFailed() {
        TwoWorkers.Request request = workers.reserve("queued-kafka-1", 40, 8);
        PrefillJob prefillJob = request.startPrefill();
        assertThat(prefillJob.state()).isEqualTo(JobState.WAITING);

        // Kafka delivers the gateway's cancel to prefill while the prompt waits in its queue.
        assertThat(workers.prefillRegistry.cancel(request.id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ABORTED);
        workers.runUntil("decode job to end", () -> request.decodeJob.state().isTerminal());

        assertThat(prefillJob.state()).isEqualTo(JobState.CANCELLED);
        assertThat(request.decodeJob.state()).isEqualTo(JobState.CANCELLED);
        // The right reason, and the right source: decode learned it from prefill's typed abort, through its registry.
        assertThat(request.decodeJob.cancelRequest().reason()).isEqualTo(CancelReason.CLIENT_CANCEL);
        assertThat(request.decodeJob.cancelRequest().source()).isEqualTo(CancelSource.UPSTREAM);
        assertThat(request.decodeEvents).last().isEqualTo(new Cancelled(CancelReason.CLIENT_CANCEL, CancelSource.UPSTREAM));
        assertThat(request.prefillEvents).last().isEqualTo(new Cancelled(CancelReason.CLIENT_CANCEL, CancelSource.KAFKA));
        assertThat(workers.decodeRegistry.isCancelled(request.id)).as("registration reported cancelled").isTrue();
        assertThat(workers.decodeMeters.counter("ripcord.cancellations", "service", "decode", "phase", "transfer",
                "path", "upstream").count()).isEqualTo(1);
        assertThat(workers.decode.aborts()).isEqualTo(1);
        // Decode's own copy of the record, arriving late, is a replay of a cancel it already applied.
        workers.runUntilQuiet();
        assertThat(workers.decodeRegistry.cancel(request.id, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(workers.decode.aborts()).isEqualTo(1);
        assertThat(workers.decodeEngine.pagePool().pagesLive()).isZero();
    }
}
