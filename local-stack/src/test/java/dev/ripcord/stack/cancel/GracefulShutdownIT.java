package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGTERM to a worker with work in flight. The class owns its stack (its tests terminate its
 * workers) and runs it with {@code ripcord.worker.drain-timeout=0s}, so the work in flight always outlives the grace
 * period: what is tested is the drain's behaviour after its timeout, without depending on how long the work takes.
 * The prefill worker is terminated first; the decode test starts it again (a new process on the same port, as an
 * orchestrator would) rather than a second stack, which would cost a broker and three JVM starts.
 *
 * <p>The phase is reached by polling the prefill journal, never by waiting a time: the long prompt
 * ({@value #PROMPT_BYTES} bytes, about 90 chunks of the {@code small} model) has computed its first chunk, so it is
 * mid-prefill and its KV is mid-transfer to decode, which is awaiting it. Then the worker gets SIGTERM, and:
 * <ul>
 *   <li>its log shows the drain in order: {@code draining}, the grace period over with exactly our request cancelled,
 *       that request's cancel with reason {@code SHUTDOWN}, the drain's last line reporting zero live pages, transfer
 *       sessions and registrations (and only the page pool's region, which Spring closes next), then the transfer
 *       agent closed with zero sessions and zero regions live;</li>
 *   <li>it exits on its own (no SIGKILL);</li>
 *   <li>the client gets a clear error naming the shutdown (an error status with an OpenAI error body, or an SSE error
 *       event followed by {@code [DONE]}), never a hang and never a truncated "success";</li>
 *   <li>the other worker releases every page, session and registration of that request.</li>
 * </ul>
 * Facts only: states, counts and log order; durations are printed, never asserted.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES) // a hang guard (a stack and a worker start here), not a time assertion
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GracefulShutdownIT {

    /** About 94 chunks of 64 tokens: seconds of prefill, so SIGTERM lands long before its end. */
    private static final int PROMPT_BYTES = 6000;
    private static final String NO_GRACE = "ripcord.worker.drain-timeout=0s";

    private static LocalStack stack;

    @BeforeAll
    static void startStack() {
        Map<String, String> properties = TestStacks.withDefaults(Map.of(
                key(SMALL_MODEL), value(SMALL_MODEL), key(CHUNK_64), value(CHUNK_64), key(BOTH), value(BOTH),
                key(NO_GRACE), value(NO_GRACE)));
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/graceful-shutdown-"
                + ProcessHandle.current().pid());
        stack = LocalStack.start(TestStacks.options(properties, logDir), null);
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    @Order(1)
    void prefillTerminatedMidPrefillDrainsInOrderReleasesEverythingAndTheClientGetsAShutdownError() throws Exception {
        Endpoints endpoints = endpoints(stack);
        String id = "sigterm-prefill-" + UUID.randomUUID();
        long decodeMark = Journal.mark(endpoints.decode());
        Call call = startLongPrompt(endpoints, id);

        boolean graceful = stack.terminate(Role.PREFILL);

        assertThat(graceful).as("prefill exited on its own after SIGTERM").isTrue();
        assertClearShutdownError(call.outcome().get(2, TimeUnit.MINUTES));
        assertDrainedInOrder(stack.logFile(Role.PREFILL), id);
        // Decode, awaiting the KV that will never come, lets go of everything it reserved.
        Awaitility.await("decode holds nothing after prefill drained").atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> Endpoints.assertIdle(endpoints.status(Role.DECODE)));
        Journal decode = Journal.since(endpoints.decode(), decodeMark);
        System.out.printf("prefill SIGTERM: decode journal %s%n", decode.events(id));
        assertThat(decode.count(id, "RESERVED")).as("decode journal %s", decode.events(id)).isEqualTo(1);
        assertThat(decode.has(id, "KV_LANDED")).isFalse();
        assertThat(decode.has(id, "FINISHED")).isFalse();
        assertThat(decode.count(id, "FREED")).isEqualTo(1);
    }

    @Test
    @Order(2)
    void decodeTerminatedMidTransferDrainsInOrderReleasesEverythingAndTheClientGetsAShutdownError() throws Exception {
        if (!stack.isAlive(Role.PREFILL)) {
            stack.restart(Role.PREFILL); // terminated by the test before; back once it answers healthy
        }
        Endpoints endpoints = endpoints(stack);
        Endpoints.assertIdle(endpoints.status(Role.PREFILL));
        Endpoints.assertIdle(endpoints.status(Role.DECODE));
        String id = "sigterm-decode-" + UUID.randomUUID();
        long prefillMark = Journal.mark(endpoints.prefill());
        long decodeMark = Journal.mark(endpoints.decode());
        Call call = startLongPrompt(endpoints, id);
        Journal decodeBefore = Journal.since(endpoints.decode(), decodeMark);
        assertThat(decodeBefore.has(id, "RESERVED")).as("decode awaits the KV: %s", decodeBefore.events(id))
                .isTrue();
        assertThat(decodeBefore.has(id, "KV_LANDED")).as("the transfer is still in flight").isFalse();

        boolean graceful = stack.terminate(Role.DECODE);

        assertThat(graceful).as("decode exited on its own after SIGTERM").isTrue();
        assertClearShutdownError(call.outcome().get(2, TimeUnit.MINUTES));
        assertDrainedInOrder(stack.logFile(Role.DECODE), id);
        // Prefill, whose transfer decode aborted, stops and frees every page, session and registration.
        Awaitility.await("prefill holds nothing after decode drained").atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> Endpoints.assertIdle(endpoints.status(Role.PREFILL)));
        Journal prefill = Journal.since(endpoints.prefill(), prefillMark);
        System.out.printf("decode SIGTERM: prefill journal %s%n", prefill.events(id));
        assertThat(prefill.has(id, "DONE")).as("prefill journal %s", prefill.events(id)).isFalse();
        assertThat(prefill.count(id, "FREED")).isEqualTo(1);
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static Endpoints endpoints(LocalStack stack) {
        return new Endpoints(URI.create(stack.url(Role.GATEWAY)), URI.create(stack.url(Role.PREFILL)),
                URI.create(stack.url(Role.DECODE)), "ripcord-small");
    }

    /** Starts the long prompt and returns once its first chunk is computed: mid-prefill, KV mid-transfer. */
    private static Call startLongPrompt(Endpoints endpoints, String id) {
        long prefillMark = Journal.mark(endpoints.prefill());
        Call call = new StreamingClient(endpoints.gateway()).start(StreamingClient.completion(endpoints.model(),
                Texts.ofBytes(PROMPT_BYTES), 8, true), id);
        DisconnectScenario.awaitChunk(endpoints, prefillMark, id, 1, call);
        Journal prefill = Journal.since(endpoints.prefill(), prefillMark);
        assertThat(prefill.has(id, "DONE")).as("still mid-prefill: %s", prefill.events(id)).isFalse();
        return call;
    }

    private static void assertClearShutdownError(Outcome outcome) {
        System.out.printf("SIGTERM: the client got %s%n", outcome);
        assertThat(outcome.completed()).as("%s", outcome).isFalse();
        assertThat(outcome.disconnected()).isFalse();
        assertThat(outcome.error()).as("a clear error, as a status with a body or as an SSE error event")
                .isNotBlank();
        assertThat(outcome.error().toLowerCase(Locale.ROOT)).as("the error names the shutdown")
                .contains("shutdown");
        if (outcome.status() == 200) {
            assertThat(outcome.sawDone()).as("the error event is followed by [DONE]").isTrue();
        } else {
            assertThat(outcome.status()).as("an error status before the first byte").isBetween(400, 599);
            assertThat(outcome.error()).contains("\"error\"");
        }
    }

    /**
     * The worker's log, complete once it exited ({@link LocalStack#terminate} joins the relay): the drain's lines in
     * order, and what it reported holding at its end.
     */
    private static void assertDrainedInOrder(Path log, String id) {
        List<String> lines = read(log);
        int draining = index(lines, 0, l -> l.contains("draining, grace period"), "draining", log);
        int cancelled = index(lines, draining, l -> l.contains("drain: grace period over, cancelled 1 request(s)"),
                "grace period over, our one request cancelled", log);
        // The registry runs the cancel on the draining thread, so the request's own line may come before or after
        // the count; both come after "draining" and before "drained".
        int jobCancelled = index(lines, draining, l -> l.contains(id) && l.contains("SHUTDOWN"),
                "the request's cancel with reason SHUTDOWN", log);
        int drained = index(lines, Math.max(cancelled, jobCancelled),
                l -> l.contains("drained; closing engine and transfer agent"), "drained", log);
        int agentClosed = index(lines, drained, l -> l.contains(" closed: liveSessions="), "transfer agent closed",
                log);
        System.out.printf("drain of %s:%n  %s%n  %s%n  %s%n  %s%n  %s%n", log.getFileName(), lines.get(draining),
                lines.get(cancelled), lines.get(jobCancelled), lines.get(drained), lines.get(agentClosed));
        assertThat(lines.get(drained)).as("what the worker held when the drain ended")
                .contains("livePages=0 liveSessions=0 liveRegistrations=0 liveRegions=1");
        assertThat(lines.get(agentClosed)).as("what the transfer agent could not release")
                .contains("liveSessions=0 liveRegions=0");
        assertThat(lines).as("no page outlived the drain").noneMatch(l -> l.contains("KV pages still live"));
    }

    /** The first line at or after {@code from} that matches; fails, naming what was expected, if none does. */
    private static int index(List<String> lines, int from, Predicate<String> match, String what, Path log) {
        for (int i = from; i < lines.size(); i++) {
            if (match.test(lines.get(i))) {
                return i;
            }
        }
        throw new AssertionError("no line '%s' after line %d of %s; its last lines:%n%s".formatted(what, from, log,
                String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()))));
    }

    private static List<String> read(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String key(String property) {
        return property.substring(0, property.indexOf('='));
    }

    private static String value(String property) {
        return property.substring(property.indexOf('=') + 1);
    }
}
