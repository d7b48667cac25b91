package dev.ripcord.worker;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class JobCancelTest {

    @Test
    void theFirstCancelIsKeptAndLaterOnesAreIgnored() {
        JobCancel cancel = new JobCancel();
        assertThat(cancel.isRequested()).isFalse();

        assertThat(cancel.request(CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND)).isTrue();
        assertThat(cancel.request(CancelReason.SHUTDOWN, CancelSource.SHUTDOWN)).isFalse();

        assertThat(cancel.isRequested()).isTrue();
        assertThat(cancel.request().reason()).isEqualTo(CancelReason.CLIENT_DISCONNECT);
        assertThat(cancel.request().source()).isEqualTo(CancelSource.IN_BAND);
    }

    @Test
    void theAbortIsClaimedExactlyOnceAcrossRacingThreads() throws Exception {
        for (int round = 0; round < 200; round++) {
            JobCancel cancel = new JobCancel();
            AtomicInteger claims = new AtomicInteger();
            CountDownLatch start = new CountDownLatch(1);
            Thread[] threads = new Thread[4];
            for (int i = 0; i < threads.length; i++) {
                threads[i] = Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (cancel.claimAbortCount()) {
                        claims.incrementAndGet();
                    }
                });
            }
            start.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertThat(claims).hasValue(1);
        }
    }
}
