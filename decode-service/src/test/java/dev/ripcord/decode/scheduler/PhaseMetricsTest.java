package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.worker.job.JobState;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The vLLM-named phase metrics of both workers, through both in process: each request's queue time on each worker,
 * its prefill time and its decode time are recorded once, and the running/waiting gauges follow it from admission to
 * its end. A cancelled generation records no decode time (vLLM's decode time is of finished requests).
 */
@ExtendWith(KvLeakCheck.class)
class PhaseMetricsTest {

    private final TwoWorkers workers = new TwoWorkers();

    @AfterEach
    void close() {
        workers.close();
    }

    @Test
    void aFinishedRequestRecordsEachPhaseOnceAndTheGaugesReturnToZero() {
        TwoWorkers.Request request = workers.reserve("phases-1", 40, 5);
        assertThat(gauge(workers.decodeMeters, "ripcord.num.requests.waiting")).as("awaiting KV").isEqualTo(1);
        request.startPrefill();
        assertThat(gauge(workers.prefillMeters, "ripcord.num.requests.waiting")).as("queued").isEqualTo(1);

        workers.runUntil("decode to finish", () -> request.decodeJob.state().isTerminal());
        workers.runUntilQuiet();

        assertThat(request.decodeJob.state()).isEqualTo(JobState.DONE);
        assertThat(timerCount(workers.prefillMeters, "ripcord.request.queue.time")).isEqualTo(1);
        assertThat(timerCount(workers.prefillMeters, "ripcord.request.prefill.time")).isEqualTo(1);
        assertThat(timerCount(workers.decodeMeters, "ripcord.request.queue.time")).isEqualTo(1);
        assertThat(timerCount(workers.decodeMeters, "ripcord.request.decode.time")).isEqualTo(1);
        for (MeterRegistry meters : new MeterRegistry[] {workers.prefillMeters, workers.decodeMeters}) {
            assertThat(gauge(meters, "ripcord.num.requests.waiting")).isZero();
            assertThat(gauge(meters, "ripcord.num.requests.running")).isZero();
        }
    }

    @Test
    void aRequestCancelledWhileDecodingRecordsNoDecodeTime() {
        TwoWorkers.Request request = workers.reserve("phases-2", 40, 64);
        request.startPrefill();
        workers.runUntil("decoding", () -> request.decodeJob.state() == JobState.RUNNING);
        workers.decodeRegistry.cancel(request.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
        workers.prefillRegistry.cancel(request.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
        workers.runUntil("decode to stop", () -> request.decodeJob.state().isTerminal());
        workers.runUntilQuiet();

        assertThat(request.decodeJob.state()).isEqualTo(JobState.CANCELLED);
        assertThat(timerCount(workers.decodeMeters, "ripcord.request.queue.time")).isEqualTo(1);
        assertThat(timerCount(workers.decodeMeters, "ripcord.request.decode.time")).isZero();
    }

    private static double gauge(MeterRegistry meters, String name) {
        return meters.get(name).gauge().value();
    }

    private static long timerCount(MeterRegistry meters, String name) {
        return meters.get(name).timer().count();
    }
}
