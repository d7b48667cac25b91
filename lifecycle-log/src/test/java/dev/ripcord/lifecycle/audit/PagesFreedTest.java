package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class PagesFreedTest {

    private final PagesFreed check = new PagesFreed();

    @Test
    void pagesFreedOnceFindNothing() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.cancelledMidPrefill("req-b");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void pagesFreedTwiceAreBroken() {
        AuditLogs log = new AuditLogs();
        log.completed("req-twice");
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-twice"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isFalse();
            assertThat(f.message()).contains("2 times");
        });
    }

    @Test
    void decodePagesNeverFreedAreMissing() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-p").withPages(3));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-p").withOutcome(LifecycleOutcome.FAILED));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> assertThat(f.missing()).isTrue());
    }

    @Test
    void prefillPagesNeverFreedAreMissing() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(STARTED, "req-p").withTokens(64));
        log.prefill(LifecycleEvent.of(CHUNK_DONE, "req-p").withChunk(0).withTokens(64));
        log.prefill(LifecycleEvent.of(JOB_FINISHED, "req-p").withOutcome(LifecycleOutcome.COMPLETED));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.instance()).isEqualTo("p1");
        });
    }

    @Test
    void aFreeThatKeepsOnePageBackIsBroken() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-keep").withPages(4));
        log.decode(LifecycleEvent.of(JOB_FINISHED, "req-keep").withOutcome(LifecycleOutcome.COMPLETED).withStep(3));
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-keep").withPages(3));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isFalse();
            assertThat(f.message()).contains("reserved 4 pages but the pool took back 3");
        });
    }

    @Test
    void aJobThatGrewFreesMoreThanItReservedAndThatIsFine() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(JOB_ADMITTED, "req-grew").withPages(4));
        log.decode(LifecycleEvent.of(PAGES_FREED, "req-grew").withPages(6));
        assertThat(Checks.run(check, log)).isEmpty();
    }
}
