package dev.ripcord.lifecycle.audit;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

class PageCachedWhenCompleteTest {

    private final PageCachedWhenComplete check = new PageCachedWhenComplete();

    @Test
    void pagesCachedAfterTheirChunkCompletedFindNothing() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-a").withTokens(100));
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-a").withPages(1).withTokens(16).withDetail("k1"));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-a").withChunk(0).withTokens(40));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, "req-a").withChunk(0).withPages(3).withTokens(48)
                .withDetail("k2 k3"));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-a").withChunk(1).withTokens(44));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, "req-a").withChunk(1).withPages(6).withTokens(96)
                .withDetail("k4 k5 k6"));
        log.prefill(LifecycleEvent.of(JOB_FINISHED, "req-a").withOutcome(LifecycleOutcome.COMPLETED));
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aPageCachedForAChunkThatACancelStoppedIsBroken() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-s").withTokens(100));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-s").withChunk(0).withTokens(40));
        log.prefill(LifecycleEvent.of(ABORTED, "req-s").withChunk(1).withLayer(1).withDetail("prefill"));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, "req-s").withChunk(1).withPages(5).withTokens(80));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.invariant()).isEqualTo(Invariant.PAGE_CACHED_WHEN_COMPLETE);
            assertThat(f.message()).contains("chunk 1, which had not completed");
        });
    }

    @Test
    void aPartlyFilledPageCachedIsBroken() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-p").withTokens(100));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-p").withChunk(0).withTokens(40));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, "req-p").withChunk(0).withPages(3).withTokens(48));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f ->
                assertThat(f.message()).contains("holding 48 positions when only 40 were complete"));
    }

    @Test
    void aJobThatStartedBeforeTheRangeIsNotJudgedOnChunksTheRangeDoesNotHold() {
        // A request in flight when the audited range opened: chunks 0 and 1 (32 positions) are before it.
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-e").withChunk(2).withTokens(16));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-e").withChunk(3).withTokens(16));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, "req-e").withChunk(3).withPages(2).withTokens(64));
        assertThat(Checks.run(check, log)).isEmpty();

        // The same with its start in the range is judged, and broken.
        AuditLogs whole = new AuditLogs();
        whole.prefill(LifecycleEvent.of(STARTED, "req-w").withTokens(100));
        whole.prefill(LifecycleEvent.of(CHUNK_DONE, "req-w").withChunk(0).withTokens(16));
        whole.prefill(LifecycleEvent.of(CHUNK_DONE, "req-w").withChunk(1).withTokens(16));
        whole.prefill(LifecycleEvent.of(PAGES_CACHED, "req-w").withChunk(1).withPages(2).withTokens(64));
        assertThat(Checks.run(check, whole)).singleElement().satisfies(f ->
                assertThat(f.message()).contains("holding 64 positions when only 32 were complete"));
    }
}
