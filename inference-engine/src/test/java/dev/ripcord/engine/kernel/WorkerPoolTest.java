package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

class WorkerPoolTest {

    @Test
    void everyWorkerRunsEveryRegionExactlyOnceAcrossManyRegions() {
        for (int size : new int[] {1, 2, 3, 5}) {
            try (WorkerPool pool = new WorkerPool(size, "test")) {
                AtomicLong[] counts = new AtomicLong[size];
                for (int i = 0; i < size; i++) {
                    counts[i] = new AtomicLong();
                }
                for (int region = 0; region < 5_000; region++) {
                    int spin = ThreadLocalRandom.current().nextInt(50);
                    pool.run((worker, workers) -> {
                        assertThat(workers).isEqualTo(size);
                        counts[worker].incrementAndGet();
                        if (spin > 40) {
                            LockSupport.parkNanos(spin * 1_000L); // randomised delays shuffle the arrival order
                        }
                    });
                }
                for (AtomicLong c : counts) {
                    assertThat(c.get()).isEqualTo(5_000);
                }
            }
        }
    }

    @Test
    void resultsWrittenByWorkersAreVisibleToTheCallerAfterRun() {
        try (WorkerPool pool = new WorkerPool(3, "test")) {
            int[] plain = new int[3 * 64];
            for (int region = 1; region <= 2_000; region++) {
                int value = region;
                pool.run((worker, workers) -> plain[worker * 64] = value);
                assertThat(plain[0]).isEqualTo(region);
                assertThat(plain[64]).isEqualTo(region);
                assertThat(plain[128]).isEqualTo(region);
            }
        }
    }

    @Test
    void aWorkerFailureIsRethrownToTheCallerAndThePoolStaysUsable() {
        try (WorkerPool pool = new WorkerPool(2, "test")) {
            assertThatThrownBy(() -> pool.run((worker, workers) -> {
                if (worker == 1) {
                    throw new IllegalArgumentException("boom in worker 1");
                }
            })).isInstanceOf(IllegalArgumentException.class).hasMessage("boom in worker 1");
            AtomicInteger ran = new AtomicInteger();
            pool.run((worker, workers) -> ran.incrementAndGet());
            assertThat(ran).hasValue(2);
        }
    }

    @Test
    void concurrentCallersAreRejectedInsteadOfSharingARegion() throws Exception {
        try (WorkerPool pool = new WorkerPool(2, "test")) {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread first = Thread.ofPlatform().start(() -> pool.run((worker, workers) -> {
                if (worker == 0) {
                    inside.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }));
            inside.await();
            assertThatThrownBy(() -> pool.run((worker, workers) -> { }))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("two threads");
            release.countDown();
            first.join();
        }
    }

    @Test
    void closeStopsTheWorkerThreadsAndIsIdempotent() throws Exception {
        WorkerPool pool = new WorkerPool(3, "closing-pool");
        AtomicReferenceArray<Thread> seen = new AtomicReferenceArray<>(3);
        pool.run((worker, workers) -> seen.set(worker, Thread.currentThread()));
        pool.close();
        pool.close();
        for (int i = 1; i < 3; i++) {
            seen.get(i).join(5_000);
            assertThat(seen.get(i).isAlive()).isFalse();
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try {
            pool.run((worker, workers) -> { });
        } catch (IllegalStateException e) {
            failure.set(e);
        }
        assertThat(failure.get()).hasMessageContaining("closed");
    }
}
