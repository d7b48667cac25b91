package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.stack.KraftBroker;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;
import tools.jackson.databind.node.ObjectNode;

import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.LONG_PROMPT_BYTES;
import static dev.ripcord.stack.cancel.CancelStacks.ONE_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Kafka is the out-of-band path, not a dependency of serving: with the broker gone, requests are still served, and a
 * disconnect or an explicit cancel still stops prefill through the in-band path, within one chunk. Publishing a
 * cancel must never block a request; it fails (bounded, in the background) instead.
 *
 * <p>This class owns its stack and its broker (the shared stacks' brokers are not reachable from tests), so it can
 * stop the broker; it is the only class whose stack is started and stopped with the class. Before the broker stops,
 * it also proves the topic's wire format from the outside: a cancel published with a plain Kafka producer, before the
 * request exists, aborts the request at admission.
 */
// Owns its stack and broker and waits on Kafka's timeouts much of its time: runs beside the other classes
// (junit-platform.properties), never while a class captures System.out.
@Execution(ExecutionMode.CONCURRENT)
@ResourceLock(Resources.SYSTEM_OUT)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KafkaUnavailableIT {

    /** Client settings of every Kafka client the Spring Cloud Stream binder creates (admin, consumers, producers). */
    private static final String BINDER_CLIENTS = "spring.cloud.stream.kafka.binder.configuration.";
    /** Client settings of the gateway's cancel producer (the binding {@code CancelBindingDefaults} configures). */
    private static final String CANCEL_PRODUCER =
            "spring.cloud.stream.kafka.bindings.ripcordCancel-out-0.producer.configuration.";

    private static KraftBroker broker;
    private static LocalStack stack;
    private static Endpoints endpoints;
    private static Path logDir;

    @BeforeAll
    static void startStackWithItsOwnBroker() {
        broker = KraftBroker.start(0);
        // The gateway's first cancel creates the binder's producer binding, whose topic check (an admin call) blocks
        // the publisher thread until the admin client gives up: Kafka's default.api.timeout.ms, 60 s, a wait this
        // test only sits through (the two cancels give up after it). 5 s here, for the binder's clients only: a
        // loopback broker that is up answers in milliseconds, even on a loaded machine.
        // Then every attempt to publish (two cancels, three attempts each, one after another on the publisher's
        // thread) waits max.block.ms for the topic's metadata: 1 s here instead of the shipped 5 s, the same
        // attempts and outcomes without 24 s of waiting.
        Map<String, String> properties = TestStacks.withDefaults(Map.of(
                key(SMALL_MODEL), value(SMALL_MODEL), key(CHUNK_64), value(CHUNK_64),
                key(ONE_RUNNING), value(ONE_RUNNING), key(BOTH), value(BOTH),
                BINDER_CLIENTS + "default.api.timeout.ms", "5000", BINDER_CLIENTS + "request.timeout.ms", "5000",
                CANCEL_PRODUCER + "max.block.ms", "1000"));
        Map<Role, Integer> ports = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            ports.put(role, freePort());
        }
        logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/kafka-unavailable-"
                + ProcessHandle.current().pid());
        try {
            stack = LocalStack.start(TestStacks.options(broker.bootstrapServers(), ports, properties, logDir), null);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
        endpoints = new Endpoints(URI.create(stack.url(Role.GATEWAY)), URI.create(stack.url(Role.PREFILL)),
                URI.create(stack.url(Role.DECODE)), "ripcord-small");
    }

    @AfterAll
    static void stopStackAndBroker() throws IOException {
        try {
            if (stack != null) {
                stack.close();
                // A stopped stack's services shut down gracefully, and what they say meanwhile reaches their logs.
                for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
                    assertThat(Files.readString(stack.logFile(role))).as("%s log", role.shortName())
                            .contains("draining, grace period").contains("drained; closing engine and transfer agent");
                }
                assertThat(Files.readString(stack.logFile(Role.GATEWAY))).contains("Graceful shutdown complete");
            }
        } finally {
            broker.close();
        }
    }

    @Test
    @Order(1)
    void cancelPublishedWithAPlainProducerBeforeTheRequestAbortsItAtAdmissionExactlyOnce() throws Exception {
        try (KafkaProducer<String, byte[]> producer = producer()) {
            CancelBeforeRegistration.assertAbortedAtAdmissionExactlyOnce(endpoints, "raw-cancel-" + UUID.randomUUID(),
                    id -> {
                        try {
                            producer.send(new ProducerRecord<>("ripcord.cancellations", id, cancelEvent(id)))
                                    .get(30, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            throw new AssertionError("publishing the cancel failed", e);
                        }
                    });
        }
    }

    @Test
    @Order(2)
    void withKafkaStoppedRequestsAreServedAndInBandCancelStillStopsPrefill() throws Exception {
        endpoints.awaitWorkersIdle();
        Prometheus gatewayBefore = Prometheus.scrape(endpoints.gateway());
        broker.close();
        Map<Role, Long> logOffsets = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            logOffsets.put(role, Files.size(stack.logFile(role)));
        }
        StreamingClient client = new StreamingClient(endpoints.gateway());

        // Plain requests are served.
        for (boolean stream : new boolean[] {true, false, true}) {
            Outcome served = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(60), 6, stream),
                    "no-kafka-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
            assertThat(served.completed()).as("served without Kafka: %s", served).isTrue();
        }

        // A disconnect still stops a long prefill within one chunk, in-band; the next request does not wait.
        DisconnectScenario.Result r = DisconnectScenario.run(endpoints, "no-kafka");
        BugReportScenarioIT.assertStoppedWithinOneChunk(r, "IN_BAND");

        // An explicit cancel of a request in flight here is in-band too.
        String longId = "no-kafka-explicit-" + UUID.randomUUID();
        long prefillMark = Journal.mark(endpoints.prefill());
        long decodeMark = Journal.mark(endpoints.decode());
        Call call = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(LONG_PROMPT_BYTES), 1,
                true), longId);
        DisconnectScenario.awaitChunk(endpoints, prefillMark, longId, 1, call);
        assertThat(client.cancel(longId)).isEqualTo(200);
        Outcome cancelled = call.outcome().get(1, TimeUnit.MINUTES);
        assertThat(cancelled.aborted()).as("answered with what it produced (nothing yet): %s", cancelled).isTrue();
        assertThat(cancelled.text()).isEmpty();

        // And requests are still served after all that.
        Outcome after = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(60, 9), 6, true),
                "no-kafka-after-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
        assertThat(after.completed()).as("%s", after).isTrue();
        endpoints.awaitWorkersIdle();
        Journal p = Journal.since(endpoints.prefill(), prefillMark);
        assertThat(p.count(longId, "STOPPED")).isEqualTo(1);
        assertThat(p.chunksAfter(longId, p.seq(longId, "CANCEL_OBSERVED"))).isLessThanOrEqualTo(1);
        // The cancel reached decode without Kafka: decode's reservation was aborted too, exactly once, and freed.
        // In-band from the gateway, or prefill's typed abort of the transfer for the same cancel (UPSTREAM), which
        // races it and may arrive first; never KAFKA, whose broker is down.
        Journal d = Journal.since(endpoints.decode(), decodeMark);
        assertThat(d.of(longId)).as("decode journal of %s", longId)
                .filteredOn(e -> e.event().equals("CANCEL_OBSERVED")).singleElement()
                .satisfies(e -> assertThat(e.detail()).containsAnyOf("via IN_BAND", "via UPSTREAM")
                        .doesNotContain("KAFKA"));
        assertThat(d.count(longId, "FREED")).isEqualTo(1);

        // The cancels the gateway published meanwhile (the disconnect, the explicit cancel) were tried in the
        // background, counted, retried, and given up on; none was acknowledged.
        int published = 2;
        int attempts = 3; // ripcord.cancel.publish-max-attempts
        Awaitility.await("the gateway gives up on the %d cancels it could not publish".formatted(published))
                .atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(500))
                .until(() -> delta(gatewayBefore, "ripcord_cancel_published_total", "outcome", "gave_up") >= published);
        Prometheus gatewayAfter = Prometheus.scrape(endpoints.gateway());
        assertThat(delta(gatewayBefore, gatewayAfter, "ripcord_cancel_published_total", "outcome", "gave_up"))
                .isEqualTo(published);
        assertThat(delta(gatewayBefore, gatewayAfter, "ripcord_cancel_published_total", "outcome", "acked")).isZero();
        assertThat(delta(gatewayBefore, gatewayAfter, "ripcord_cancel_publish_retries_total"))
                .as("retries: every failed cancel was retried in the background").isEqualTo(published * (attempts - 1));

        // What the services said meanwhile: reported, not asserted (the point is that nothing blocked).
        for (Role role : Role.values()) {
            List<String> lines = linesSince(stack.logFile(role), logOffsets.get(role));
            long warn = lines.stream().filter(l -> l.contains(" WARN ")).count();
            long error = lines.stream().filter(l -> l.contains(" ERROR ")).count();
            System.out.printf("kafka down: %s logged %d lines, %d WARN, %d ERROR; first WARN: %s%n",
                    role.shortName(), lines.size(), warn, error, lines.stream().filter(l -> l.contains(" WARN "))
                            .findFirst().orElse("-"));
        }
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static double delta(Prometheus before, String name, String... labels) {
        return delta(before, Prometheus.scrape(endpoints.gateway()), name, labels);
    }

    private static double delta(Prometheus before, Prometheus after, String name, String... labels) {
        return after.sum(name, labels) - before.sum(name, labels);
    }

    private static KafkaProducer<String, byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        return new KafkaProducer<>(props);
    }

    /**
     * A {@code CancelEvent} as its wire format is documented ({@code CancelEventCodec}), written by hand: the topic
     * is an interface other producers use, so the test speaks it from the outside.
     */
    private static byte[] cancelEvent(String requestId) {
        ObjectNode event = StreamingClient.JSON.createObjectNode();
        event.put("schemaVersion", 1);
        event.put("requestId", requestId);
        event.put("reason", "CLIENT_CANCEL");
        event.putObject("origin").put("service", "kafka-unavailable-test").put("instance", "junit");
        event.put("timestamp", Instant.now().toString());
        return StreamingClient.JSON.writeValueAsBytes(event);
    }

    private static List<String> linesSince(Path file, long offset) throws IOException {
        byte[] all = Files.readAllBytes(file);
        int from = (int) Math.min(offset, all.length);
        return new String(all, from, all.length - from, StandardCharsets.UTF_8).lines().toList();
    }

    private static String key(String property) {
        return property.substring(0, property.indexOf('='));
    }

    private static String value(String property) {
        return property.substring(property.indexOf('=') + 1);
    }

    private static int freePort() {
        return dev.ripcord.stack.FreePorts.one();
    }
}
