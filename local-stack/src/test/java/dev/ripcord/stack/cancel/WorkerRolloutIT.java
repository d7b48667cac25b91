package dev.ripcord.stack.cancel;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cli.RipcordCli;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A rollout on one machine: a running stack (one worker of each role) gets a second prefill and a second decode
 * worker, then its first ones are drained, while two clients send requests one after another all along. The
 * gateway reads its workers from the files the launcher rewrites, so it uses the new workers without a restart and
 * stops sending to a draining one; the drained workers finish what they hold. Facts only: every request completes,
 * each new worker served some, each drained worker exited on its own, and {@code ripcord audit} finds every invariant
 * held. The class owns its stack (it changes its workers); the tiny model keeps each request short.
 */
// Captures System.out (the CLI prints there): no concurrent class may print meanwhile (junit-platform.properties).
@ResourceLock(Resources.SYSTEM_OUT)
@Timeout(value = 8, unit = TimeUnit.MINUTES) // a hang guard (a stack and two workers start here), not a time assertion
class WorkerRolloutIT {

    private static final Duration ANSWER = Duration.ofMinutes(2);
    private static LocalStack stack;

    @BeforeAll
    static void startStack() {
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/worker-rollout-"
                + ProcessHandle.current().pid());
        stack = LocalStack.start(TestStacks.options(TestStacks.withDefaults(Map.of()), logDir), null);
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    void workersAddedAndDrainedUnderTrafficServeEveryRequestAndTheAuditIsClean() throws Exception {
        StreamingClient client = new StreamingClient(URI.create(stack.url(Role.GATEWAY)), stack.apiKey());
        String run = Long.toHexString(System.nanoTime());
        List<Outcome> outcomes = new CopyOnWriteArrayList<>();
        AtomicInteger sent = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        List<CompletableFuture<Void>> traffic = List.of(0, 1).stream().map(c -> CompletableFuture.runAsync(() -> {
            while (!stop.get()) {
                String id = "rollout-" + run + "-" + c + "-" + sent.incrementAndGet();
                try {
                    outcomes.add(client.start(StreamingClient.completion("ripcord-tiny", "Once upon a time", 24,
                            true), id).outcome().get(ANSWER.toSeconds(), TimeUnit.SECONDS));
                } catch (Exception e) {
                    throw new IllegalStateException(id + " got no outcome", e);
                }
            }
        }, runnable -> Thread.ofPlatform().daemon().name("traffic-" + c).start(runnable))).toList();

        LocalStack.Instance prefill2 = stack.addWorker(Role.PREFILL, freePort());
        LocalStack.Instance decode2 = stack.addWorker(Role.DECODE, freePort());
        await("the gateway routes to the added workers").atMost(ANSWER).pollInterval(Duration.ofMillis(200))
                .until(() -> journalSize(prefill2.url()) > 0 && journalSize(decode2.url()) > 0);

        boolean prefillExited = stack.drainWorker(Role.PREFILL, 0);
        boolean decodeExited = stack.drainWorker(Role.DECODE, 0);
        int afterDrain = outcomes.size();
        await("requests served by the remaining workers").atMost(ANSWER).until(() -> outcomes.size() >= afterDrain + 4);
        stop.set(true);
        CompletableFuture.allOf(traffic.toArray(CompletableFuture[]::new)).get(ANSWER.toSeconds(), TimeUnit.SECONDS);

        System.out.printf("rollout: %d requests, drained prefill exited on its own %s, decode %s%n", outcomes.size(),
                prefillExited, decodeExited);
        assertThat(outcomes).as("every request of the rollout").allSatisfy(o -> assertThat(o.completed())
                .as("%s", o).isTrue());
        assertThat(prefillExited).as("the drained prefill worker exited on its own").isTrue();
        assertThat(decodeExited).as("the drained decode worker exited on its own").isTrue();
        assertThat(stack.isAlive(Role.PREFILL)).isFalse(); // the first one is gone, the added one serves
        assertThat(outcomes.size()).isGreaterThan(afterDrain);

        String kafka = stack.bootstrapServers();
        await("the lifecycle audit").atMost(ANSWER).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Run audit = cli("audit", "--since", "10m", "--kafka", kafka, "--in-flight-grace", "0s");
            assertThat(audit.exit()).as("%s%s", audit.out(), audit.err()).isZero();
            assertThat(audit.out()).contains("OK: every invariant held");
        });
    }

    /** Entries in a worker's scheduler journal: more than none once the gateway sent it a request. */
    private static int journalSize(String workerUrl) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create(workerUrl + "/internal/v1/journal"))
                .header("X-Ripcord-Internal-Token", stack.internalToken()).build(),
                HttpResponse.BodyHandlers.ofString());
        return StreamingClient.JSON.readTree(response.body()).size();
    }

    private static int freePort() {
        return dev.ripcord.stack.FreePorts.one();
    }

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
}
