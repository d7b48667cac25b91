package dev.ripcord.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;

/**
 * A transfer's clock counts acknowledged bytes only, runs while at least one write is in flight (overlapping writes
 * once), and stops when the last one is acknowledged: time with nothing in flight is not the transfer's.
 */
class TransferClockTest {

    @Test
    void bytesCountWhenAcknowledgedAndAFailedWriteAddsNone() {
        TransferClock clock = new TransferClock();
        CompletableFuture<Void> a = new CompletableFuture<>();
        CompletableFuture<Void> b = new CompletableFuture<>();
        CompletableFuture<Void> c = new CompletableFuture<>();
        clock.time(100, () -> a);
        clock.time(200, () -> b);
        clock.time(400, () -> c);
        assertThat(clock.bytes()).isZero();

        b.complete(null);
        assertThat(clock.bytes()).isEqualTo(200);
        a.completeExceptionally(new IllegalStateException("aborted"));
        c.complete(null);
        assertThat(clock.bytes()).isEqualTo(600);
    }

    @Test
    void theClockStopsWhenNothingIsInFlightAndRunsWhileSomethingIs() throws InterruptedException {
        TransferClock clock = new TransferClock();
        CompletableFuture<Void> first = new CompletableFuture<>();
        clock.time(10, () -> first);
        long inFlight = clock.busyNanos();
        Thread.sleep(2);
        assertThat(clock.busyNanos()).as("counts up while a write is in flight").isGreaterThan(inFlight);

        first.complete(null);
        long stopped = clock.busyNanos();
        Thread.sleep(2);
        assertThat(clock.busyNanos()).as("idle: the engine computes, the transfer waits").isEqualTo(stopped);

        clock.time(10, () -> CompletableFuture.completedFuture(null)); // a write acknowledged at once
        assertThat(clock.bytes()).isEqualTo(20);
        assertThat(clock.busyNanos()).isGreaterThanOrEqualTo(stopped);
    }

    @Test
    void aSendThatThrowsLeavesTheClockIdle() {
        TransferClock clock = new TransferClock();
        assertThatThrownBy(() -> clock.time(10, () -> {
            throw new IllegalStateException("session closed");
        })).isInstanceOf(IllegalStateException.class);
        long stopped = clock.busyNanos();
        assertThat(clock.busyNanos()).isEqualTo(stopped);
        assertThat(clock.bytes()).isZero();
    }
}
