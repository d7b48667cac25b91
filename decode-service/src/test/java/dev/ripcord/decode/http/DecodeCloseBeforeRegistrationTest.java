package dev.ripcord.decode.http;

import java.time.Duration;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import reactor.core.Disposable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A gateway that closes a decode exchange while the request is still being registered (registration runs on the
 * engine loop, which may be busy with a step) cancels it all the same: the job ends at admission with nothing
 * reserved, instead of queueing, reserving pages and holding them until the transfer's attach timeout. Found in an
 * abort storm, where the gateway lost a connection in that window.
 */
@DecodeWorkerTest
class DecodeCloseBeforeRegistrationTest {

    @Autowired
    DecodeRoutes routes;

    @Autowired
    DecodeScheduler scheduler;

    @Autowired
    WorkerContext context;

    @Autowired
    CancelProperties cancel;

    @Autowired
    CancellationRegistry registry;

    @Test
    void aCloseBeforeRegistrationEndsTheJobAtAdmissionWithNothingReserved() throws Exception {
        String id = "close-before-registration-1";
        try (BusyEngineLoop busy = BusyEngineLoop.hold(scheduler.engineLoop())) { // registration waits behind it
            Disposable exchange = routes.accept(new DecodeRequest(id, 4, 4, new Sampling(0.0, 1.0, 7L), false),
                    new WorkerRoutes(context, cancel, Duration.ofSeconds(1))).subscribe();
            exchange.dispose(); // the gateway's connection closes while registration waits for the loop
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> RequestJournal.entries(context, id).stream()
                .anyMatch(e -> e.event().equals("CANCELLED_AT_ADMISSION")));
        assertThat(RequestJournal.entries(context, id)).extracting(JournalEntry::event)
                .doesNotContain("RESERVED", "QUEUED");
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);
    }
}
