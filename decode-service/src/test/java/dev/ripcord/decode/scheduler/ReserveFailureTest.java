package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.EngineLoop;
import dev.ripcord.worker.SchedulerJournal;
import dev.ripcord.worker.WorkerContext;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Admission reserves pages before it opens the receive session; when the open throws, the pages go back. */
@ExtendWith(KvLeakCheck.class)
class ReserveFailureTest {

    @Test
    void aReceiveSessionThatCannotOpenGivesTheReservedPagesBack() {
        try (TwoWorkers w = new TwoWorkers();
             TransferAgent stranger = TransferAgent.start(TransferAgentOptions.defaults("stranger")
                     .withBackend(Backend.TCP))) {
            // The pool region belongs to another agent than the scheduler's: openReceive throws after the reserve.
            SchedulerJournal journal = new SchedulerJournal(64);
            DecodeScheduler misfit = new DecodeScheduler(new WorkerContext(w.decodeEngine, stranger, w.decodeRegion,
                    new CancellationRegistry(), new SimpleMeterRegistry(), journal, EngineLoop.Mode.MANUAL),
                    new DecodeProperties(4, Duration.ofSeconds(1),
                            new DecodeProperties.Admission(8, Duration.ofSeconds(20))));
            CompletableFuture<DecodeJob> admitted = misfit.submit(new DecodeRequest("misfit", 8, 8,
                    new Sampling(0, 1, 42), true));
            misfit.engineLoop().runUntilIdle(1000);

            assertThat(admitted).isCompletedExceptionally();
            assertThat(w.decodeEngine.pagePool().pagesLive()).as("pages reserved for the request").isZero();
            assertThat(misfit.running()).isZero();
            assertThat(misfit.awaitingKv()).isZero();
            assertThat(TwoWorkers.events(journal, "misfit")).doesNotContain("RESERVED");
            misfit.close();
        }
    }
}
