package dev.ripcord.lifecycle.audit;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.lifecycle.LifecycleEvent;
import org.junit.jupiter.api.Test;

class HitOnlyCachedPagesTest {

    private final HitOnlyCachedPages check = new HitOnlyCachedPages();

    private static void cached(AuditLogs log, String id, String keys) {
        log.prefill(LifecycleEvent.of(CHUNK_DONE, id).withChunk(0).withTokens(64));
        log.prefill(LifecycleEvent.of(PAGES_CACHED, id).withChunk(0).withPages(2).withTokens(32).withDetail(keys));
    }

    @Test
    void aHitOnPagesCachedBeforeFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(PREFIX_CACHE_CLEARED, null));
        cached(log, "req-a", "k1 k2");
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-b").withPages(2).withTokens(32).withDetail("k2"));
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aHitOnAnEvictedPageIsBroken() {
        AuditLogs log = new AuditLogs();
        cached(log, "req-a", "k1 k2");
        log.prefill(LifecycleEvent.of(PAGES_EVICTED, null).withPages(1).withDetail("k2"));
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-b").withPages(2).withTokens(32).withDetail("k2"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.invariant()).isEqualTo(Invariant.HIT_ONLY_CACHED_PAGES);
            assertThat(f.requestId()).isEqualTo("req-b");
        });
    }

    @Test
    void aHitOnAPageNeverCachedOrClearedSinceIsBroken() {
        AuditLogs log = new AuditLogs();
        cached(log, "req-a", "k1 k2");
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-b").withPages(3).withTokens(48).withDetail("k3"));
        log.prefill(LifecycleEvent.of(PREFIX_CACHE_CLEARED, null));
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-c").withPages(1).withTokens(16).withDetail("k1"));
        assertThat(Checks.run(check, log)).extracting(Finding::requestId).containsExactly("req-b", "req-c");
    }

    @Test
    void aProcessWhoseStartIsOutsideTheRangeIsNotJudged() {
        AuditLogs log = new AuditLogs();
        log.lose("p1", 5);
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-b").withPages(2).withTokens(32).withDetail("k2"));
        assertThat(Checks.run(check, log)).isEmpty();
    }
}
