package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class KvSessionReleasedOnceTest {

    private final KvSessionReleasedOnce check = new KvSessionReleasedOnce();

    @Test
    void sessionsDrainedThenReleasedOnceFindNothing() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.cancelledMidPrefill("req-b");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aSessionReleasedTwiceIsBroken() {
        AuditLogs log = new AuditLogs();
        log.completed("req-twice");
        log.prefill(LifecycleEvent.of(KV_RELEASED, "req-twice").withBytes(4096));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isFalse();
            assertThat(f.message()).contains("2 times");
        });
    }

    @Test
    void releasingBeforeTheDrainIsBroken() {
        AuditLogs log = new AuditLogs();
        log.prefill(LifecycleEvent.of(KV_OPENED, "req-r"));
        log.prefill(LifecycleEvent.of(KV_RELEASED, "req-r"));
        log.prefill(LifecycleEvent.of(KV_DRAINED, "req-r"));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("before it drained"));
    }

    @Test
    void aSessionNeverReleasedIsMissing() {
        AuditLogs log = new AuditLogs();
        log.gateway(LifecycleEvent.of(ADMITTED, "req-leak"));
        LifecycleEvent opened = log.decode(LifecycleEvent.of(KV_OPENED, "req-leak"));
        log.gateway(LifecycleEvent.of(FINISHED, "req-leak").withOutcome(LifecycleOutcome.FAILED));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.instance()).isEqualTo("d1");
            assertThat(f.events()).contains(opened);
        });
    }

    @Test
    void twoOpensAndOneReleaseAreMissingARelease() {
        AuditLogs log = new AuditLogs();
        log.decode(LifecycleEvent.of(KV_OPENED, "req-two").withDetail("RECEIVER"));
        log.decode(LifecycleEvent.of(KV_OPENED, "req-two").withDetail("RECEIVER"));
        log.decode(LifecycleEvent.of(KV_DRAINED, "req-two"));
        log.decode(LifecycleEvent.of(KV_RELEASED, "req-two"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.missing()).isTrue();
            assertThat(f.message()).contains("opened 2 KV sessions and released 1");
        });
    }
}
