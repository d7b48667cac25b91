package dev.ripcord.lifecycle.audit;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleOutcome;
import org.junit.jupiter.api.Test;

import static dev.ripcord.lifecycle.LifecycleEventType.*;
import static org.assertj.core.api.Assertions.assertThat;

class NoAbortAfterFinishTest {

    private final NoAbortAfterFinish check = new NoAbortAfterFinish();

    @Test
    void jobsThatEndOnceFindNothing() {
        AuditLogs log = new AuditLogs();
        log.completed("req-a");
        log.cancelledMidPrefill("req-b");
        assertThat(Checks.run(check, log)).isEmpty();
    }

    @Test
    void anAbortAfterANormalFinishIsBroken() {
        AuditLogs log = new AuditLogs();
        log.completed("req-x");
        log.decode(LifecycleEvent.of(ABORTED, "req-x").withDetail("decode"));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("after it finished normally"));
    }

    @Test
    void aJobEndedTwiceIsBroken() {
        AuditLogs log = new AuditLogs();
        log.completed("req-x");
        log.prefill(LifecycleEvent.of(JOB_FINISHED, "req-x").withOutcome(LifecycleOutcome.FAILED));
        assertThat(Checks.run(check, log)).singleElement()
                .satisfies(f -> assertThat(f.message()).contains("ended the job 2 times"));
    }
}
