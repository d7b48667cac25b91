package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class AtMostOneAbortTest {

    private final AtMostOneAbort check = new AtMostOneAbort();

    @Test
    void oneAbortPerJobFindsNothing() {
        AuditLogs log = new AuditLogs();
        log.cancelledMidPrefill("req-c");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void aSecondAbortOnTheSameWorkerIsBroken() {
        AuditLogs log = new AuditLogs();
        log.cancelledMidPrefill("req-double");
        LifecycleEvent second = log.decode(LifecycleEvent.of(ABORTED, "req-double").withDetail("transfer"));
        assertThat(Checks.run(check, log)).singleElement().satisfies(f -> {
            assertThat(f.requestId()).isEqualTo("req-double");
            assertThat(f.events()).hasSize(2).contains(second);
        });
    }
}
