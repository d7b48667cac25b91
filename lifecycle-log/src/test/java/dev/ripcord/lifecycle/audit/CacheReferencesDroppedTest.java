package dev.ripcord.lifecycle.audit;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.lifecycle.LifecycleEvent;
import org.junit.jupiter.api.Test;

class CacheReferencesDroppedTest {

    private final CacheReferencesDropped check = new CacheReferencesDropped();

    @Test
    void aJobThatDropsEveryReferenceItTookFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-a").withTokens(100));
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-a").withPages(4).withTokens(64).withDetail("k4"));
        log.prefill(LifecycleEvent.of(PAGES_FREED, "req-a").withPages(7));
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aJobThatKeepsAReferenceToACachedPageIsBroken() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-k").withTokens(100));
        log.prefill(LifecycleEvent.of(PREFIX_HIT, "req-k").withPages(4).withTokens(64).withDetail("k4"));
        log.prefill(LifecycleEvent.of(PAGES_FREED, "req-k").withPages(3));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.invariant()).isEqualTo(Invariant.CACHE_REFERENCES_DROPPED);
            assertThat(f.message()).contains("took 4 pages from the prefix cache but dropped 3 references");
        });
    }
}
