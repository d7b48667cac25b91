package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The share of the host each service of a co-located stack gets. */
class HostBudgetTest {

    private static final Path ROOT = Path.of(".");

    @Test
    void workersSplitTheProcessorsEvenlyAndNeverTogetherExceedThem() {
        assertThat(HostBudget.engineThreads(2, 2)).isEqualTo(1);
        assertThat(HostBudget.engineThreads(16, 2)).isEqualTo(8);
        assertThat(HostBudget.engineThreads(16, 3)).isEqualTo(5);
        for (int processors = 2; processors <= 64; processors++) {
            for (int workers = 2; workers <= processors; workers++) {
                assertThat(HostBudget.engineThreads(processors, workers) * workers).isLessThanOrEqualTo(processors);
            }
        }
    }

    @Test
    void everyWorkerGetsAThreadEvenWhenThereAreMoreWorkersThanProcessors() {
        assertThat(HostBudget.engineThreads(2, 4)).isEqualTo(1);
        assertThat(HostBudget.engineThreads(1, 2)).isEqualTo(1);
        assertThatThrownBy(() -> HostBudget.engineThreads(0, 2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theDefaultStackGivesEachOfItsTwoWorkersHalfTheHostAndTheGatewayNoEngineThreads() {
        StackOptions options = StackOptions.parse(new String[0], ROOT);
        assertThat(HostBudget.workerArguments(Role.PREFILL, options, 2)).containsExactly("--ripcord.engine.threads=1");
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 8)).containsExactly("--ripcord.engine.threads=4");
        assertThat(HostBudget.workerArguments(Role.GATEWAY, options, 8)).isEmpty();
    }

    @Test
    void instancesCountAsWorkersOfTheirOwn() {
        StackOptions options = StackOptions.parse(new String[] {"--prefills=2", "--decodes=2"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 8)).containsExactly("--ripcord.engine.threads=2");
    }

    @Test
    void threadsGivenOnTheCommandLineWin() {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.engine.threads=3"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.PREFILL, options, 2)).isEmpty();
    }

    @Test
    void theUsersJvmFlagsComeAfterTheBudgetsSoTheyWin() {
        // HotSpot takes the last occurrence of a flag.
        StackOptions options = StackOptions.parse(new String[] {"--jvm-flag=-Xmx1g"}, ROOT);
        var flags = LocalStack.serviceJvmFlags(options, Role.DECODE);
        assertThat(flags).contains("-XX:+UseSerialGC", "-Xmx" + HostBudget.HEAP_MAX);
        assertThat(flags.lastIndexOf("-Xmx1g")).isGreaterThan(flags.indexOf("-Xmx" + HostBudget.HEAP_MAX));
    }
}
