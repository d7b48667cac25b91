package dev.ripcord.stack.cancel;

import static dev.ripcord.stack.cancel.CancelStacks.AUTO_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.ONE_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_ATTACH_TIMEOUT;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_DECODE_BATCH;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_ENGINE_BATCH;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_JOURNAL;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_KV_PAGES;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_QUEUE;
import static dev.ripcord.stack.cancel.CancelStacks.TCP_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.TWO_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.VECTOR_KERNELS;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.node.ObjectNode;

/**
 * Each KV backend end to end, each on a stack that exists anyway (a stack of its own costs CI half a minute): the
 * workers themselves say which backend carried every request's KV, in their meters ({@code ripcord_kv_bytes_total}
 * by {@code backend}, sent at prefill and received at decode, and the per-request
 * {@code ripcord_kv_transfer_*}) and in prefill's journal (the DONE line names the backend). A request's answer alone
 * would not tell: every backend produces the same tokens.
 *
 * <ul>
 *   <li>{@code shm}: the default test stack, as {@code ./ripcord up} (one host);</li>
 *   <li>{@code tcp}: the abort storm's stack ({@link AbortStormIT}), which runs TCP;</li>
 *   <li>{@code auto}: the small-model {@code both} stack; all its services share one host, so it picks shared
 *   memory.</li>
 * </ul>
 */
class KvBackendIT {

    private static final int REQUESTS = 4;

    @Nested
    @LocalStackTest
    @Timeout(value = 3, unit = TimeUnit.MINUTES) // a hang guard, not a time assertion
    class SharedMemory {
        @Test
        void theDefaultStackMovesEveryRequestsKvThroughSharedMemory(TestStack stack) {
            assertCarriedBy(stack, "shm");
        }
    }

    @Nested
    @LocalStackTest(properties = {STORM_KV_PAGES, STORM_QUEUE, TWO_RUNNING, STORM_DECODE_BATCH, STORM_ENGINE_BATCH,
            STORM_ATTACH_TIMEOUT, STORM_JOURNAL, TCP_BACKEND, VECTOR_KERNELS})
    @Timeout(value = 3, unit = TimeUnit.MINUTES) // a hang guard, not a time assertion
    class Tcp {
        @Test
        void aTcpStackMovesEveryRequestsKvOverTcp(TestStack stack) {
            assertCarriedBy(stack, "tcp");
        }
    }

    @Nested
    @LocalStackTest(properties = {SMALL_MODEL, CHUNK_64, ONE_RUNNING, BOTH, AUTO_BACKEND})
    @Timeout(value = 3, unit = TimeUnit.MINUTES) // a hang guard, not a time assertion
    class Auto {
        @Test
        void autoPicksSharedMemoryWhenPrefillAndDecodeShareAHost(TestStack stack) {
            assertCarriedBy(stack, "shm");
        }
    }

    /** Sends {@link #REQUESTS} completions and checks that {@code backend} and only it carried their KV. */
    private static void assertCarriedBy(TestStack stack, String backend) {
        String other = backend.equals("shm") ? "tcp" : "shm";
        stack.awaitWorkersIdle(); // a clean start, whatever ran before on this shared stack
        Counts before = Counts.of(stack);
        List<Long> marks = new ArrayList<>();
        for (int i = 0; i < stack.instances().prefills(); i++) {
            marks.add(Journal.mark(stack.url(Role.PREFILL, i)));
        }
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < REQUESTS; i++) {
            String id = "kv-backend-" + backend + "-" + i + "-" + UUID.randomUUID();
            ObjectNode body = GatewayClient.completionRequest(stack.modelName(), Texts.ofBytes(60 + 37 * i, i), 3);
            GatewayClient.Answer answer = stack.gateway(i % stack.instances().gateways())
                    .send(GatewayClient.COMPLETIONS, body, id);
            assertThat(answer.finishReason()).as("request %s", id).isEqualTo("length");
            ids.add(id);
        }
        stack.awaitWorkersIdle();
        Counts after = Counts.of(stack);

        long sent = after.sent(backend) - before.sent(backend);
        assertThat(sent).as("KV bytes prefill sent over %s", backend).isPositive();
        assertThat(after.received(backend) - before.received(backend)).as("KV bytes decode received via %s", backend)
                .isEqualTo(sent);
        assertThat(after.sent(other) - before.sent(other)).as("KV bytes sent over %s", other).isZero();
        assertThat(after.received(other) - before.received(other)).as("KV bytes received via %s", other).isZero();
        assertThat(after.transfers(backend) - before.transfers(backend)).as("transfers timed on %s", backend)
                .isEqualTo(REQUESTS);
        assertThat(after.transferBytes(backend) - before.transferBytes(backend)).as("their bytes").isEqualTo(sent);
        assertThat(after.transfers(other) - before.transfers(other)).as("transfers timed on %s", other).isZero();

        List<JournalEntry> done = new ArrayList<>();
        for (int i = 0; i < stack.instances().prefills(); i++) {
            Journal journal = Journal.since(stack.url(Role.PREFILL, i), marks.get(i));
            for (String id : ids) {
                journal.of(id).stream().filter(e -> e.event().equals("DONE")).forEach(done::add);
            }
        }
        assertThat(done).as("one DONE per request at prefill").hasSize(REQUESTS);
        assertThat(done).allSatisfy(e -> assertThat(e.detail()).as(e.requestId())
                .contains("over " + backend.toUpperCase(java.util.Locale.ROOT)));
    }

    /** The KV meters of every worker instance of a stack, summed. */
    private record Counts(List<Prometheus> prefills, List<Prometheus> decodes) {

        static Counts of(TestStack stack) {
            List<Prometheus> prefills = new ArrayList<>();
            for (int i = 0; i < stack.instances().prefills(); i++) {
                prefills.add(Prometheus.scrape(stack.url(Role.PREFILL, i)));
            }
            List<Prometheus> decodes = new ArrayList<>();
            for (int i = 0; i < stack.instances().decodes(); i++) {
                decodes.add(Prometheus.scrape(stack.url(Role.DECODE, i)));
            }
            return new Counts(prefills, decodes);
        }

        long sent(String backend) {
            return sum(prefills, "ripcord_kv_bytes_total", "direction", "sent", "backend", backend);
        }

        long received(String backend) {
            return sum(decodes, "ripcord_kv_bytes_total", "direction", "received", "backend", backend);
        }

        long transfers(String backend) {
            return sum(prefills, "ripcord_kv_transfer_time_seconds_count", "backend", backend);
        }

        long transferBytes(String backend) {
            return sum(prefills, "ripcord_kv_transfer_bytes_sum", "backend", backend);
        }

        private static long sum(List<Prometheus> scrapes, String name, String... labels) {
            double sum = 0;
            for (Prometheus p : scrapes) {
                sum += p.sum(name, labels);
            }
            return Math.round(sum);
        }
    }
}
