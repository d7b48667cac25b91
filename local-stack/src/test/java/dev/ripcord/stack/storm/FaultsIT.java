package dev.ripcord.stack.storm;

import java.nio.file.Path;
import java.util.EnumSet;

import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.storm.FaultSchedule.Fault;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fault bench's small version ({@code ./ripcord bench faults} is the full one): a few hundred storm requests on
 * 2 gateways, 2 prefill, 2 decode and a 3-node KRaft cluster (a process per node) while the leader broker of a
 * cancellations partition is killed with SIGKILL and restarted, a decode worker is killed (mid-transfer when one is
 * open) and restarted, a prefill worker is paused and resumed, and the proxies delay and reset the
 * gateway-to-worker and service-to-Kafka links and cut them with a partition that drops
 * (past the Kafka clients' request timeout), with two API keys that share IDs and reuse them. Then every gate of
 * the oracle ({@link FaultsVerdict}) holds: counts, never times.
 *
 * <p>In the default suite, and CI's: on the 2-core machine it takes about two and a half minutes once the suite has
 * trained the services' AOT caches (docs/benchmarks.md), most of it starting the cluster and the six services and the
 * schedule's own pauses between faults.
 */
class FaultsIT {

    static final int REQUESTS = 250;
    static final long SEED = 7;

    @Test
    void aSeededFaultScheduleUnderAStormLeavesEveryCheckOfTheOracleClean() throws Exception {
        FaultsBench.Config config = new FaultsBench.Config(REQUESTS, SEED, EnumSet.of(Fault.BROKER_KILL,
                Fault.WORKER_KILL, Fault.WORKER_PAUSE, Fault.NET_DELAY, Fault.NET_RESET, Fault.NET_PARTITION), 16, 0.7);
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/faults-"
                + ProcessHandle.current().pid());

        FaultsBench.Summary summary = FaultsBench.run(config, "faults-it", logDir, System.out);
        summary.print(System.out);
        System.out.println(summary.json());

        assertThat(summary.injected()).extracting(FaultSchedule.Injected::fault)
                .as("every fault injected: %s", summary.skipped())
                .containsExactlyInAnyOrderElementsOf(config.faults());
        for (FaultsVerdict.Gate gate : summary.gates()) {
            assertThat(gate.passed()).as("gate %s (%d): %s; audit: %s", gate.name(), gate.value(), gate.detail(),
                    summary.storm().audit().summary()).isTrue();
        }
        assertThat(summary.storm().audit().requests()).as("requests the audit judged").isPositive();
        assertThat(summary.storm().reuse().sent()).as("IDs sent again once their request ended").isPositive();
        assertThat(summary.storm().reuse().twins()).as("IDs both keys sent at once").isPositive();
        assertThat(summary.probes()).as("cancels published during the outages").isPositive();
        assertThat(summary.verdict()).isEqualTo("PASS");
    }
}
