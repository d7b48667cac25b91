package dev.ripcord.prefill.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class KvSendBurstsTest {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final AtomicLong now = new AtomicLong(1_000);
    private final KvSendBursts bursts = new KvSendBursts(meters, now::get);

    private Timer time() {
        return meters.get("ripcord.prefill.kv.send.time").timer();
    }

    private DistributionSummary bytes() {
        return meters.get("ripcord.prefill.kv.send.bytes").summary();
    }

    @Test
    void aBurstIsRecordedWhenItsLastSendIsAcknowledgedWithItsBytesAndTheTimeSinceItStarted() {
        CompletableFuture<Void> first = new CompletableFuture<>();
        CompletableFuture<Void> second = new CompletableFuture<>();
        KvSendBursts.Burst burst = bursts.start();
        burst.whenAcknowledged(List.of(first, second), 8192);

        now.addAndGet(300);
        first.complete(null);
        assertThat(time().count()).isZero();
        assertThat(bytes().count()).isZero();

        now.addAndGet(700);
        second.complete(null);
        assertThat(time().count()).isEqualTo(1);
        assertThat(time().totalTime(TimeUnit.NANOSECONDS)).isEqualTo(1_000);
        assertThat(bytes().count()).isEqualTo(1);
        assertThat(bytes().totalAmount()).isEqualTo(8192);
    }

    @Test
    void aBurstWithAFailedSendIsNotRecordedSoAnAbortedTransferNeverInflatesTheRate() {
        CompletableFuture<Void> ok = CompletableFuture.completedFuture(null);
        CompletableFuture<Void> aborted = new CompletableFuture<>();
        bursts.start().whenAcknowledged(List.of(ok, aborted), 4096);

        aborted.completeExceptionally(new IllegalStateException("session aborted"));

        assertThat(time().count()).isZero();
        assertThat(bytes().count()).isZero();
    }

    @Test
    void aChunkThatFinishedNoPageRecordsNothing() {
        bursts.start().whenAcknowledged(List.of(), 0);

        assertThat(time().count()).isZero();
        assertThat(bytes().count()).isZero();
    }

    @Test
    void burstsAddUpSoTheRateIsTotalBytesOverTotalBurstTime() {
        for (int i = 0; i < 3; i++) {
            CompletableFuture<Void> send = new CompletableFuture<>();
            bursts.start().whenAcknowledged(List.of(send), 1_000);
            now.addAndGet(500);
            send.complete(null);
            now.addAndGet(10_000); // the engine computing the next chunk: not transfer time
        }

        assertThat(bytes().totalAmount() / time().totalTime(TimeUnit.NANOSECONDS)).isEqualTo(2.0);
    }
}
