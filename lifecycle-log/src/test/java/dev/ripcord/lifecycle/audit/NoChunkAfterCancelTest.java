package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class NoChunkAfterCancelTest {

    private final NoChunkAfterCancel check = new NoChunkAfterCancel();

    @Test
    void theChunkComputingWhenTheCancelArrivedMayFinish() {
        AuditLogs log = new AuditLogs();
        log.cancelledMidPrefill("req-c");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aChunkStartedAfterTheCancelWasObservedIsBroken() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-chunk"));
        log.prefill(LifecycleEvent.of(STARTED, "req-chunk").withTokens(256));
        LifecycleEvent observed = log.prefill(LifecycleEvent.of(CANCEL_OBSERVED, "req-chunk")
                .withCancel(CancelReason.DEADLINE, CancelSource.KAFKA));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-chunk").withChunk(0).withTokens(64));
        LifecycleEvent late = log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-chunk").withChunk(1).withTokens(64));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.events()).contains(observed, late);
            assertThat(f.message()).contains("finished chunk 0").contains("computing then: none");
        });
    }

    @Test
    void aChunkFinishingAfterACancelObservedWhileNoChunkWasComputingIsBroken() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-idle").withTokens(128));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-idle").withChunk(0).withTokens(64));
        log.prefill(LifecycleEvent.of(CANCEL_OBSERVED, "req-idle")); // between chunks: nothing computing
        LifecycleEvent late = log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-idle").withChunk(1).withTokens(64));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> assertThat(f.events()).contains(late));
    }

    @Test
    void theChunkComputingWhenTheCancelArrivedIsTheOnlyOneAllowed() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-one").withTokens(192));
        log.prefill(LifecycleEvent.of(CANCEL_OBSERVED, "req-one").withChunk(0));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-one").withChunk(0).withTokens(64));
        assertThat(Checks.run(check, log)).isEmpty();

        LifecycleEvent late = log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-one").withChunk(1).withTokens(64));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.events()).contains(late);
            assertThat(f.message()).contains("finished chunk 1");
        });
    }
}
