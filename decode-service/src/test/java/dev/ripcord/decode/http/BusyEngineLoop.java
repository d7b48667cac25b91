package dev.ripcord.decode.http;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.ripcord.worker.EngineLoop;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker's engine loop held in one long task, as in a long step: whatever is handed to the loop meanwhile (a
 * registration) waits behind it until {@link #close}.
 */
final class BusyEngineLoop implements AutoCloseable {

    private final CountDownLatch release = new CountDownLatch(1);

    private BusyEngineLoop() {
    }

    /** Returns once the loop is inside the task. */
    static BusyEngineLoop hold(EngineLoop loop) throws InterruptedException {
        BusyEngineLoop busy = new BusyEngineLoop();
        CountDownLatch inside = new CountDownLatch(1);
        loop.execute(() -> {
            inside.countDown();
            try {
                busy.release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(inside.await(30, TimeUnit.SECONDS)).as("the engine loop took the task").isTrue();
        return busy;
    }

    /** Lets the loop go on. */
    @Override
    public void close() {
        release.countDown();
    }
}
