package dev.ripcord.stack.cancel;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import dev.ripcord.cli.RipcordCli;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code ripcord audit --since 10m} against a real stack (the shared default one) that served some requests and
 * cancelled others: it exits 0 and counts them, and each request's timeline holds its events from all three services.
 * The CLI runs in-process ({@link RipcordCli#run}), reading the stack's Kafka like an operator would.
 */
// Captures System.out (the CLI prints there): no concurrent class may print meanwhile (junit-platform.properties).
@ResourceLock(Resources.SYSTEM_OUT)
@LocalStackTest
class LifecycleAuditIT {

    private static final Duration ANSWER = Duration.ofMinutes(2);

    private record Run(int exit, String out, String err) {
    }

    /** Runs the CLI in this JVM, capturing what it prints. Not concurrent: System.out is swapped. */
    private static synchronized Run cli(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
        try {
            int exit = RipcordCli.run(args);
            return new Run(exit, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void auditOfTheLastTenMinutesOfAStackThatServedAndCancelledRequestsExitsZeroAndCountsThem(TestStack stack)
            throws Exception {
        StreamingClient client = new StreamingClient(stack.url(Role.GATEWAY), stack.apiKey());
        String run = Long.toHexString(System.nanoTime());
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String id = "audit-" + run + "-served-" + i;
            Outcome outcome = client.start(StreamingClient.completion(stack.modelName(), "Once upon a time " + i, 16,
                    i % 2 == 0), id).outcome().get(ANSWER.toSeconds(), TimeUnit.SECONDS);
            assertThat(outcome.completed()).as("%s", outcome).isTrue();
            served.add(id);
        }
        // Cancelled for certain: a deadline of one microsecond (the gateway cancels, in band and on Kafka).
        String deadline = "audit-" + run + "-deadline";
        ObjectNode body = StreamingClient.completion(stack.modelName(), "A story that runs out of time", 400, true);
        body.put("timeout", 0.000001);
        assertThat(client.start(body, deadline).outcome().get(ANSWER.toSeconds(), TimeUnit.SECONDS).completed())
                .isFalse();
        // Most likely cancelled mid-decode: the client goes away after the first piece of text.
        String disconnected = "audit-" + run + "-disconnect";
        Call call = client.start(StreamingClient.completion(stack.modelName(), "A story nobody reads", 400, true),
                disconnected);
        call.firstText().get(ANSWER.toSeconds(), TimeUnit.SECONDS);
        call.disconnect();
        call.outcome().get(ANSWER.toSeconds(), TimeUnit.SECONDS);
        stack.awaitWorkersIdle();

        // The lifecycle events are published asynchronously: audit until the last of them has arrived. A violation
        // would keep the audit failing, and the last output is in the failure message.
        String kafka = stack.bootstrapServers();
        await().atMost(ANSWER).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Run audit = cli("audit", "--since", "10m", "--kafka", kafka, "--in-flight-grace", "0s", "--json");
            assertThat(audit.exit()).as("%s%s", audit.out(), audit.err()).isZero();
            JsonNode report = StreamingClient.JSON.readTree(audit.out());
            assertThat(report.path("requests").asInt()).isGreaterThanOrEqualTo(5);
            assertThat(report.path("outcomes").path("COMPLETED").asInt()).isGreaterThanOrEqualTo(3);
            assertThat(report.path("outcomes").path("CANCELLED").asInt()).isGreaterThanOrEqualTo(1);
            assertThat(report.path("cancels").asInt()).isGreaterThanOrEqualTo(1);
            assertThat(report.path("cancelsByReason").path("DEADLINE").asInt()).isGreaterThanOrEqualTo(1);
            for (String id : served) {
                assertThat(finished(kafka, id)).isEqualTo("COMPLETED");
            }
            assertThat(finished(kafka, deadline)).isEqualTo("CANCELLED");
            assertThat(finished(kafka, disconnected)).isIn("CANCELLED", "COMPLETED");
        });

        // The same audit as an operator reads it.
        // With the default 30 s in-flight grace every request of this short run would be exempt from the "missing"
        // checks, and an audit that judged nothing fails: the grace goes, as above.
        Run human = cli("audit", "--since", "10m", "--kafka", kafka, "--in-flight-grace", "0s");
        assertThat(human.exit()).as("%s%s", human.out(), human.err()).isZero();
        assertThat(human.out()).contains("OK: every invariant held");
    }

    /** The one terminal outcome of {@code id} in its timeline ({@code --request}), with all three services in it. */
    private static String finished(String kafka, String id) {
        Run timeline = cli("audit", "--since", "10m", "--kafka", kafka, "--request", id, "--json",
                "--in-flight-grace", "0s");
        assertThat(timeline.exit()).as("%s%s", timeline.out(), timeline.err()).isZero();
        JsonNode events = StreamingClient.JSON.readTree(timeline.out()).path("events");
        List<String> outcomes = new ArrayList<>();
        List<String> services = new ArrayList<>();
        for (JsonNode e : events) {
            services.add(e.path("service").asString());
            if ("gateway".equals(e.path("service").asString()) && "FINISHED".equals(e.path("type").asString())) {
                outcomes.add(e.path("outcome").asString());
            }
        }
        assertThat(outcomes).as("terminal outcomes of %s in %s", id, events).hasSize(1);
        if (outcomes.getFirst().equals("COMPLETED")) {
            assertThat(services).as("services in the timeline of %s", id).contains("gateway", "prefill", "decode");
        }
        return outcomes.getFirst();
    }
}
