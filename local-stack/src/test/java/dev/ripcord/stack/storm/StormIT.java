package dev.ripcord.stack.storm;

import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A small random-phase cancel storm in CI (the 10,000-request one is {@code ./ripcord bench storm}, figures in
 * docs/benchmarks.md): 250 drawn requests over two gateways, two prefill and two decode workers, 70 % of them
 * cancelled at a phase, by a source and at a gateway drawn from a fixed seed; sent with two API keys, a fifth of them
 * sent again once ended and a fifth with a twin of the other key under the same ID. Same stack as {@code TwoGatewayCancelIT}.
 */
@LocalStackTest(gateways = 2, prefills = 2, decodes = 2,
        properties = {"ripcord.gateway.cancel-relay.answer-timeout=10s"})
class StormIT {

    static final int REQUESTS = 250;
    static final long SEED = 12;

    @Test
    void aSeededStormLeavesEveryOutputRightAndNothingBehind(TestStack stack) throws Exception {
        StormPlan plan = StormPlan.draw(REQUESTS, SEED, stack.instances().gateways(), 0.7);

        Storm.Report report = new Storm(stack, 16).run(plan, SEED);
        report.print(System.out);

        assertThat(report.wrongOutputs()).as("completed requests whose text differs from the reference: %s",
                report.wrongExamples()).isZero();
        assertThat(report.partialNotPrefix()).as("cancelled requests whose partial text is not a prefix of the reference")
                .isZero();
        assertThat(report.uncancelledNotCompleted()).as("requests nobody cancelled that did not complete").isZero();
        assertThat(report.reuse().abortedUncancelled())
                .as("requests nobody cancelled answered as cancelled (reused IDs, both keys' IDs): %s",
                        report.reuse().examples()).isZero();
        assertThat(report.reuse().sent()).as("IDs sent again once their request ended").isPositive();
        assertThat(report.reuse().afterCancel()).as("IDs sent again right after a cancel").isPositive();
        assertThat(report.reuse().completed()).as("every reused ID served normally").isEqualTo(report.reuse().sent());
        assertThat(report.reuse().twins()).as("IDs both keys sent at once").isPositive();
        assertThat(report.failures()).as("requests that neither completed nor were cancelled; no answer: %s",
                report.noAnswer()).isEmpty();
        assertThat(report.workersIdle()).as("every worker back to idle: %s", report.workers()).isTrue();
        assertThat(report.leaks()).as("leaked pages, sessions, registrations, regions, gateway requests and legs")
                .isZero();
        assertThat(report.audit().ran()).as("the lifecycle audit ran: %s", report.audit().summary()).isTrue();
        assertThat(report.audit().violations()).as("lifecycle audit: %s", report.audit().summary()).isZero();
        // A client that left before the gateway admitted its request left no trace in the log.
        assertThat(report.audit().requests()).as("the audit saw the storm's requests").isGreaterThan(REQUESTS / 2);
        assertThat(report.results()).as("the storm cancelled and completed requests").containsKeys("CANCELLED",
                "COMPLETED");
    }
}
