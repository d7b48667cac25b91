package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.awaitility.Awaitility;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The race the bug report's step 4 is about, made deterministic: the cancel for an ID is delivered to the workers
 * <em>before</em> any request with that ID exists, then the request arrives. Each worker must keep the cancel and
 * abort the registration the moment it happens, exactly once, before any work.
 *
 * <p>The gateway sends the decode leg first and the prefill leg only once decode has reserved KV, so a request
 * aborted at decode's admission never reaches prefill. To prove prefill's admission path as well, the same ID is
 * then submitted to the prefill worker directly, as the gateway would (with a well-formed transfer descriptor that
 * is never used).
 */
final class CancelBeforeRegistration {

    private CancelBeforeRegistration() {
    }

    /** How a test delivers a cancel for an ID no request has yet. */
    @FunctionalInterface
    interface CancelDelivery {
        void deliver(String requestId);
    }

    /**
     * Delivers the cancel, waits until both workers hold it as a tombstone, sends the request and checks that each
     * worker aborted it at admission exactly once and holds nothing for it.
     */
    static void assertAbortedAtAdmissionExactlyOnce(Endpoints stack, String requestId, CancelDelivery delivery)
            throws Exception {
        stack.awaitWorkersIdle();
        long prefillMark = Journal.mark(stack.prefill());
        long decodeMark = Journal.mark(stack.decode());
        WorkerStatus prefillBefore = stack.status(Role.PREFILL);
        WorkerStatus decodeBefore = stack.status(Role.DECODE);
        double prefillTombstones = tombstonedByKafka(stack, Role.PREFILL);
        double decodeTombstones = tombstonedByKafka(stack, Role.DECODE);

        delivery.deliver(requestId);
        // The cancel travels through Kafka: wait until both registries hold it, not for a time.
        Awaitility.await("both workers hold the cancel for %s as a tombstone".formatted(requestId))
                .atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> tombstonedByKafka(stack, Role.PREFILL) > prefillTombstones
                        && tombstonedByKafka(stack, Role.DECODE) > decodeTombstones);

        StreamingClient client = new StreamingClient(stack.gateway());
        Outcome outcome = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(40), 8, true),
                requestId).outcome().get(1, TimeUnit.MINUTES);
        assertThat(outcome.aborted()).as("the client gets an aborted answer, not tokens: %s", outcome).isTrue();
        assertThat(outcome.text()).isEmpty();
        assertThat(outcome.textEvents()).isZero();

        List<PrefillEvent> prefillEvents = submitToPrefill(stack, requestId);
        assertThat(prefillEvents).as("prefill answers the tombstoned request with its cancel, typed")
                .singleElement().isInstanceOfSatisfying(Cancelled.class,
                        e -> assertThat(e.source()).isEqualTo(CancelSource.TOMBSTONE));
        stack.awaitWorkersIdle();

        Journal d = Journal.since(stack.decode(), decodeMark);
        Journal p = Journal.since(stack.prefill(), prefillMark);
        assertThat(d.count(requestId, "CANCELLED_AT_ADMISSION")).as(d.toString()).isEqualTo(1);
        assertThat(d.has(requestId, "RESERVED")).as("no page was reserved").isFalse();
        assertThat(p.count(requestId, "CANCELLED_AT_ADMISSION")).as(p.toString()).isEqualTo(1);
        assertThat(p.events(requestId)).as("no work and exactly one abort record at prefill")
                .noneMatch(e -> e.startsWith("QUEUED") || e.startsWith("STARTED") || e.startsWith("CHUNK")
                        || e.startsWith("STOPPED") || e.startsWith("REMOVED_FROM_QUEUE"));
        for (Journal journal : List.of(p, d)) {
            assertThat(journal.count(requestId, "CANCEL_OBSERVED")).as("one abort handler run").isEqualTo(1);
            assertThat(journal.of(requestId).getFirst().detail()).contains("via TOMBSTONE");
        }
        assertThat(stack.status(Role.PREFILL).aborts() - prefillBefore.aborts()).isEqualTo(1);
        assertThat(stack.status(Role.DECODE).aborts() - decodeBefore.aborts()).isEqualTo(1);
    }

    /** Cancels consumed from the topic for IDs the worker had not registered: kept as tombstones. */
    private static double tombstonedByKafka(Endpoints stack, Role role) {
        return Prometheus.scrape(stack.worker(role)).sum("ripcord_cancel_consumed_total", "outcome", "tombstoned");
    }

    /** {@code POST /internal/v1/prefill} as the gateway sends it, read to the end. */
    static List<PrefillEvent> submitToPrefill(Endpoints stack, String requestId) {
        // Where the KV would go: a receiver that does not exist (a tombstoned request never connects to it). Built
        // with the library's own record so the test follows its wire format.
        String transfer = new ReceiveDescriptor(requestId, "no-such-decode", 1, "localhost", 1, null, null, null, -1,
                0, 1, 1, 1, List.of(new ByteRange(0, 4096)), 4096).encode();
        PrefillRequest body = new PrefillRequest(requestId, new int[] {1, 72, 105, 33}, Sampling.GREEDY, transfer);
        HttpRequest request = TestCredentials.withInternalToken(
                        HttpRequest.newBuilder(stack.prefill().resolve(InternalApi.PREFILL)), stack.internalToken())
                .timeout(Duration.ofMinutes(1))
                .header(RequestIds.HEADER, requestId)
                .header("Content-Type", "application/json")
                .header("Accept", InternalApi.NDJSON)
                .POST(HttpRequest.BodyPublishers.ofByteArray(StreamingClient.JSON.writeValueAsBytes(body)))
                .build();
        try {
            HttpResponse<Stream<String>> response = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1).build()
                    .send(request, HttpResponse.BodyHandlers.ofLines());
            try (var lines = response.body()) {
                List<String> all = lines.filter(l -> !l.isBlank()).toList();
                assertThat(response.statusCode()).as("prefill answered %s", all).isEqualTo(200);
                return all.stream().map(l -> StreamingClient.JSON.readValue(l, PrefillEvent.class)).toList();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
