package dev.ripcord.stack.storm;

import java.nio.file.Path;
import java.util.EnumSet;

import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.storm.FaultSchedule.Fault;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fault bench's small version ({@code ./ripcord bench faults} is the full one): a few hundred storm requests on
 * 2 gateways, 2 prefill, 2 decode and a 3-node KRaft cluster while the leader broker of a cancellations partition
 * is killed and restarted, a decode worker is killed (mid-transfer when one is open) and restarted, a prefill
 * worker is paused and resumed, and the proxies delay, reset and partition the gateway-to-worker and
 * service-to-Kafka links, with two API keys that share IDs and reuse them. Then every count of the oracle is 0.
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
        assertThat(summary.storm().audit().ran()).as("the audit ran: %s", summary.storm().audit().summary()).isTrue();
        assertThat(summary.storm().audit().violations()).as("audit: %s", summary.storm().audit().summary()).isZero();
        assertThat(summary.storm().workersIdle()).as("workers idle: %s", summary.storm().workers()).isTrue();
        assertThat(summary.storm().leaks()).as("leaked pages, sessions, registrations, regions, gateway requests")
                .isZero();
        assertThat(summary.wrongOutputs()).as("wrong outputs (storm: %s)", summary.storm().wrongExamples()).isZero();
        assertThat(summary.storm().partialNotPrefix()).as("partial texts that are not a prefix").isZero();
        assertThat(summary.storm().reuse().abortedUncancelled())
                .as("requests nobody cancelled answered as cancelled (reused IDs, both keys' IDs): %s",
                        summary.storm().reuse().examples()).isZero();
        assertThat(summary.storm().reuse().sent()).as("IDs sent again once their request ended").isPositive();
        assertThat(summary.storm().reuse().twins()).as("IDs both keys sent at once").isPositive();
        assertThat(summary.lostCancels()).as("cancels published during outages and lost: %s",
                summary.lostCancelIds()).isZero();
        assertThat(summary.probes()).as("cancels published during the outages").isPositive();
        assertThat(summary.clientsWithoutAnswer()).as("clients without a terminal answer: %s",
                summary.storm().failures()).isZero();
        assertThat(summary.ttftWithinOneChunk()).as("TTFT after recovery %.0f ms within one chunk (%.0f ms) of idle "
                + "(%.0f ms)", summary.ttftAfterMs(), summary.chunkMs(), summary.ttftIdleMs()).isTrue();
        assertThat(summary.clean()).isTrue();
    }
}
