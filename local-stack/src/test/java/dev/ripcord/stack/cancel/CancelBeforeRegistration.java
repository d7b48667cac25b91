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
import dev.ripcord.protocol.DecodeRequest;
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
 * The race the bug report's step 4 is about, made deterministic: the cancel for a request is delivered to the workers
 * <em>before</em> they have registered it, then the request arrives. Each worker must keep the cancel and abort the
 * registration the moment it happens, exactly once, before any work.
 *
 * <p>Workers know a request by the internal ID its gateway mints at admission, before it sends or publishes anything
 * about it; every cancel the gateway publishes names one. So the cancel here is for an internal ID minted as the
 * gateway mints them, and the request is then submitted to each worker directly under it, as the gateway sends its
 * legs (prefill with a well-formed transfer descriptor that is never used). Then the client's own ID is used for a
 * request through the gateway: a new request, with a new internal ID, which the early cancel cannot reach.
 */
final class CancelBeforeRegistration {

    private CancelBeforeRegistration() {
    }

    /** How a test delivers a cancel for an (internal) ID no worker has registered yet. */
    @FunctionalInterface
    interface CancelDelivery {
        void deliver(String internalId);
    }

    /**
     * Delivers the cancel, waits until both workers hold it as a tombstone, submits the request to each worker and
     * checks that each aborted it at admission exactly once and holds nothing for it; then serves a request with the
     * same client ID through the gateway.
     */
    static void assertAbortedAtAdmissionExactlyOnce(Endpoints stack, String clientId, CancelDelivery delivery)
            throws Exception {
        stack.awaitWorkersIdle();
        long prefillMark = Journal.mark(stack.prefill());
        long decodeMark = Journal.mark(stack.decode());
        WorkerStatus prefillBefore = stack.status(Role.PREFILL);
        WorkerStatus decodeBefore = stack.status(Role.DECODE);
        double prefillTombstones = tombstonedByKafka(stack, Role.PREFILL);
        double decodeTombstones = tombstonedByKafka(stack, Role.DECODE);
        String internalId = RequestIds.internalId(clientId); // as the gateway mints it at admission

        delivery.deliver(internalId);
        // The cancel travels through Kafka: wait until both registries hold it, not for a time.
        Awaitility.await("both workers hold the cancel for %s as a tombstone".formatted(internalId))
                .atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> tombstonedByKafka(stack, Role.PREFILL) > prefillTombstones
                        && tombstonedByKafka(stack, Role.DECODE) > decodeTombstones);

        List<String> decodeEvents = submitToDecode(stack, internalId);
        assertThat(decodeEvents).as("decode answers the tombstoned request with its cancel, typed").singleElement()
                .satisfies(line -> assertThat(line).contains("\"CANCELLED\"").contains("TOMBSTONE"));
        List<PrefillEvent> prefillEvents = submitToPrefill(stack, internalId);
        assertThat(prefillEvents).as("prefill answers the tombstoned request with its cancel, typed")
                .singleElement().isInstanceOfSatisfying(Cancelled.class,
                        e -> assertThat(e.source()).isEqualTo(CancelSource.TOMBSTONE));
        stack.awaitWorkersIdle();

        Journal d = Journal.since(stack.decode(), decodeMark);
        Journal p = Journal.since(stack.prefill(), prefillMark);
        assertThat(d.count(clientId, "CANCELLED_AT_ADMISSION")).as(d.toString()).isEqualTo(1);
        assertThat(d.has(clientId, "RESERVED")).as("no page was reserved").isFalse();
        assertThat(p.count(clientId, "CANCELLED_AT_ADMISSION")).as(p.toString()).isEqualTo(1);
        assertThat(p.events(clientId)).as("no work and exactly one abort record at prefill")
                .noneMatch(e -> e.startsWith("QUEUED") || e.startsWith("STARTED") || e.startsWith("CHUNK")
                        || e.startsWith("STOPPED") || e.startsWith("REMOVED_FROM_QUEUE"));
        for (Journal journal : List.of(p, d)) {
            assertThat(journal.count(clientId, "CANCEL_OBSERVED")).as("one abort handler run").isEqualTo(1);
            assertThat(journal.of(clientId).getFirst().detail()).contains("via TOMBSTONE");
        }
        assertThat(stack.status(Role.PREFILL).aborts() - prefillBefore.aborts()).isEqualTo(1);
        assertThat(stack.status(Role.DECODE).aborts() - decodeBefore.aborts()).isEqualTo(1);

        // The client's ID names a new request, which no earlier cancel can reach.
        StreamingClient client = new StreamingClient(stack.gateway());
        Outcome outcome = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(40), 8, true),
                clientId).outcome().get(1, TimeUnit.MINUTES);
        assertThat(outcome.completed()).as("served under the same client ID: %s", outcome).isTrue();
        stack.awaitWorkersIdle();
        assertThat(stack.status(Role.DECODE).aborts() - decodeBefore.aborts()).as("no second abort").isEqualTo(1);
    }

    /**
     * Publishes a {@code CancelEvent} for {@code requestId} with a plain Kafka producer, as its wire format is
     * documented ({@code CancelEventCodec}), written by hand: the topic is an interface other producers use.
     */
    static void publishRaw(String bootstrapServers, String requestId) {
        java.util.Properties props = new java.util.Properties();
        props.put("bootstrap.servers", bootstrapServers);
        props.put("acks", "all");
        try (org.apache.kafka.clients.producer.KafkaProducer<String, byte[]> producer =
                new org.apache.kafka.clients.producer.KafkaProducer<>(props,
                        new org.apache.kafka.common.serialization.StringSerializer(),
                        new org.apache.kafka.common.serialization.ByteArraySerializer())) {
            tools.jackson.databind.node.ObjectNode event = StreamingClient.JSON.createObjectNode();
            event.put("schemaVersion", 1);
            event.put("requestId", requestId);
            event.put("reason", "CLIENT_CANCEL");
            event.putObject("origin").put("service", "cancel-before-registration-test").put("instance", "junit");
            event.put("timestamp", java.time.Instant.now().toString());
            producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("ripcord.cancellations", requestId,
                    StreamingClient.JSON.writeValueAsBytes(event))).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("publishing the cancel failed", e);
        }
    }

    /** Cancels consumed from the topic for IDs the worker had not registered: kept as tombstones. */
    private static double tombstonedByKafka(Endpoints stack, Role role) {
        return Prometheus.scrape(stack.worker(role)).sum("ripcord_cancel_consumed_total", "outcome", "tombstoned");
    }

    /** {@code POST /internal/v1/decode} as the gateway sends it, read to the end: its NDJSON lines. */
    static List<String> submitToDecode(Endpoints stack, String requestId) {
        DecodeRequest body = new DecodeRequest(requestId, 4, 8, Sampling.GREEDY, false);
        HttpRequest request = TestCredentials.withInternalToken(
                        HttpRequest.newBuilder(stack.decode().resolve(InternalApi.DECODE)), stack.internalToken())
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
                assertThat(response.statusCode()).as("decode answered %s", all).isEqualTo(200);
                return all;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
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
