package dev.ripcord.stack.storm;

import java.nio.file.Path;
import java.util.EnumSet;

import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.storm.FaultSchedule.Fault;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The oracle bites: a small storm on a stack the fault bench sabotaged on purpose ({@code ./ripcord bench faults
 * --sabotage=KIND} runs one kind at full size), no fault injected, must fail, naming the checks that caught it. Two
 * kinds at once, each in its own service, so that one stack start serves both: the decode worker keeps one KV page
 * back on a free ({@code keep-page}: the leak count, the idle check, and the audit's PAGES_FREED, which sees fewer
 * pages freed than reserved), and the gateway fails one request with a 500 ({@code error-500}: an error no fault
 * explains).
 */
// Owns its cluster and stack, and waits for a sabotaged worker that never goes idle: runs beside the other classes
// (junit-platform.properties), never while a class captures System.out.
@Execution(ExecutionMode.CONCURRENT)
@ResourceLock(Resources.SYSTEM_OUT)
class FaultsSabotageIT {

    static final int REQUESTS = 30;
    static final long SEED = 5;

    @Test
    void aSabotagedStackFailsTheVerdictNamingTheChecksThatCaughtIt() throws Exception {
        FaultsBench.Config config = new FaultsBench.Config(REQUESTS, SEED, EnumSet.noneOf(Fault.class), 8, 0.5,
                "keep-page,error-500");
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/faults-sabotage-"
                + ProcessHandle.current().pid());

        FaultsBench.Summary summary = FaultsBench.run(config, new TestStacks.Instances(1, 1, 1), "faults-sabotage-it",
                logDir, System.out);
        summary.print(System.out);

        assertThat(summary.clean()).as("the verdict of a sabotaged run").isFalse();
        assertThat(summary.verdict()).startsWith("FAIL: ").contains("errors_by_kind", "leaks", "audit");
        assertThat(summary.gate("errors_by_kind").detail()).as("the error no fault explains")
                .containsPattern("1 x (500|stream) internal_error outside every fault");
        assertThat(summary.gate("leaks").value()).as("the page kept back").isEqualTo(1);
        assertThat(summary.storm().audit().summary()).as("ripcord audit names the invariant")
                .contains("PAGES_FREED");
        // What the sabotage did not touch still holds: the oracle names its checks, not everything.
        assertThat(summary.gate("wrong_outputs").passed()).isTrue();
        assertThat(summary.gate("stray_aborts").passed()).isTrue();
        assertThat(summary.gate("audit_coverage").passed()).isTrue();
    }
}
