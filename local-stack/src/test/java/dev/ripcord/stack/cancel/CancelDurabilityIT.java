package dev.ripcord.stack.cancel;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.cli.RipcordCli;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.stack.KraftBroker;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Cancels survive real restarts, and replaying them is harmless, proven with real processes and the operator's own
 * tool ({@code ripcord cancels}, run in-process): one stack that owns its broker (so it can restart it), in ordered
 * steps.
 * <ol>
 *   <li>A broker restart (clean, same log directory) loses no cancel it acknowledged ({@code acks=all}), and the
 *       services' clients carry on afterwards.</li>
 *   <li>The decode worker is killed with SIGKILL; a cancel published while it is down reaches the restarted process
 *       as a tombstone from the replay window, and a request with that ID is aborted at admission exactly once (at
 *       decode, and at prefill when sent there).</li>
 *   <li>Replaying the whole topic into the running stack aborts nothing, creates no tombstone, and changes no
 *       output.</li>
 * </ol>
 * The replay window is 1 h here (the retention), so "every record in the topic" is exactly what a restarted worker
 * replays whatever the machine's speed; the window's boundary itself is tested in-process, on a manual clock
 * ({@code CancellationRegistryTest}).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CancelDurabilityIT {

    private static final String TOPIC = "ripcord.cancellations";
    /** Kafka client settings of the workers' cancel consumer (cancel-events' input binding). */
    private static final String CANCEL_CONSUMER =
            "spring.cloud.stream.kafka.bindings.ripcordCancelConsumer-in-0.consumer.configuration.";

    private static KraftBroker broker;
    private static LocalStack stack;
    private static Endpoints endpoints;

    @BeforeAll
    static void startStackWithItsOwnBroker() {
        broker = KraftBroker.start(0);
        // A restarted worker provisions (checks) the topics again while the machine is busy starting it: more time
        // than the 30 s default, so that a loaded CI machine does not fail the restart itself.
        // Window and tombstone TTL of 1 h: no record or tombstone ages out during the test, however slow the machine
        // (the boundaries themselves are tested on a manual clock), so every count below is exact.
        // The killed decode rejoins its consumer group (the stack names each instance, so its group survives it):
        // the broker answers the rejoin once the killed member's session has expired, Kafka's 45 s by default, a
        // wait that proves nothing. 10 s here (heartbeats every 3 s, so a busy machine does not expire a live one).
        Map<String, String> properties = TestStacks.withDefaults(Map.of("ripcord.cancel.replay-window", "1h",
                "ripcord.cancel.tombstone-ttl", "1h", "ripcord.cancel.admin-timeout", "3m",
                CANCEL_CONSUMER + "session.timeout.ms", "10000", CANCEL_CONSUMER + "heartbeat.interval.ms", "3000"));
        Map<Role, Integer> ports = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            ports.put(role, freePort());
        }
        try {
            stack = LocalStack.start(TestStacks.options(broker.bootstrapServers(), ports, properties,
                    TestStacks.repositoryRoot().resolve(
                            "local-stack/target/e2e-logs/durability-" + ProcessHandle.current().pid())), null);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
        endpoints = new Endpoints(URI.create(stack.url(Role.GATEWAY)), URI.create(stack.url(Role.PREFILL)),
                URI.create(stack.url(Role.DECODE)), "ripcord-tiny");
    }

    @AfterAll
    static void stopStackAndBroker() {
        try {
            if (stack != null) {
                stack.close();
            }
        } finally {
            broker.close();
        }
    }

    @Test
    @Order(1)
    void aBrokerRestartLosesNoAcknowledgedCancel() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String id = "dur-broker-" + i + "-" + UUID.randomUUID();
            // publish returns 0 only once the broker acknowledged the record (acks=all, idempotent producer).
            assertThat(cancels("publish", id, "--reason", "CLIENT_CANCEL")).isZero();
            ids.add(id);
        }

        broker.restart();

        assertThat(topicKeys()).as("every acknowledged cancel is still in the topic").containsAll(ids);
        // The services' clients reconnect by themselves: a cancel published now reaches both workers.
        String after = "dur-broker-after-" + UUID.randomUUID();
        assertThat(cancels("publish", after, "--reason", "DEADLINE")).isZero();
        awaitEveryRecordConsumed(Role.PREFILL, 0);
        awaitEveryRecordConsumed(Role.DECODE, 0);
    }

    @Test
    @Order(2)
    void aKilledWorkerLearnsOnRestartWhatWasCancelledWhileItWasDownAndAbortsSuchARequestExactlyOnce()
            throws Exception {
        endpoints.awaitWorkersIdle();
        long prefillMark = Journal.mark(endpoints.prefill());
        long prefillAborts = endpoints.status(Role.PREFILL).aborts();

        stack.kill(Role.DECODE);
        // Workers know a request by the internal ID its gateway minted at admission; a cancel names one. The
        // request is sent to the workers under that ID, as the gateway sends it, so the cancel can reach it.
        String clientId = "dur-down-" + UUID.randomUUID();
        String id = RequestIds.internalId(clientId);
        assertThat(cancels("publish", id, "--reason", "CLIENT_CANCEL")).isZero();
        stack.restart(Role.DECODE);

        // A new process: its counters start at 0, and its replay of the window covers the whole topic (1 h).
        awaitEveryRecordConsumed(Role.DECODE, 0);
        awaitEveryRecordConsumed(Role.PREFILL, 0);
        assertThat(tombstoned(Role.DECODE)).as("the restarted decode holds the cancels as tombstones").isPositive();

        List<String> decodeEvents = CancelBeforeRegistration.submitToDecode(endpoints, id);
        assertThat(decodeEvents).as("the restarted decode answers the request with its cancel, not tokens")
                .singleElement().satisfies(line -> assertThat(line).contains("\"CANCELLED\"").contains("TOMBSTONE"));
        List<PrefillEvent> prefillEvents = CancelBeforeRegistration.submitToPrefill(endpoints, id);
        assertThat(prefillEvents).singleElement().isInstanceOfSatisfying(Cancelled.class,
                e -> assertThat(e.source()).isEqualTo(CancelSource.TOMBSTONE));
        endpoints.awaitWorkersIdle();

        Journal d = Journal.since(endpoints.decode(), 0);
        Journal p = Journal.since(endpoints.prefill(), prefillMark);
        for (Journal journal : List.of(d, p)) {
            assertThat(journal.count(clientId, "CANCELLED_AT_ADMISSION")).as(journal.toString()).isEqualTo(1);
            assertThat(journal.count(clientId, "CANCEL_OBSERVED")).as("one abort handler run").isEqualTo(1);
            assertThat(journal.of(clientId).getFirst().detail()).contains("via TOMBSTONE");
        }
        assertThat(endpoints.status(Role.DECODE).aborts()).as("the restarted decode aborted exactly this one")
                .isEqualTo(1);
        assertThat(endpoints.status(Role.PREFILL).aborts() - prefillAborts).isEqualTo(1);

        // And it serves: a request through the gateway completes.
        StreamingClient client = new StreamingClient(endpoints.gateway());
        Outcome served = client.start(StreamingClient.completion(endpoints.model(), Texts.ofBytes(40), 8, true),
                "dur-served-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
        assertThat(served.completed()).as("served after the restart: %s", served).isTrue();
        endpoints.awaitWorkersIdle();
    }

    @Test
    @Order(3)
    void replayingTheWholeTopicIntoARunningStackAbortsNothingNewAndChangesNoOutput() throws Exception {
        endpoints.awaitWorkersIdle();
        StreamingClient client = new StreamingClient(endpoints.gateway());
        String prompt = Texts.ofBytes(60);
        Outcome before = client.start(StreamingClient.completion(endpoints.model(), prompt, 12, true),
                "dur-before-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
        assertThat(before.completed()).as("%s", before).isTrue();
        endpoints.awaitWorkersIdle();

        Map<Role, Long> marks = new EnumMap<>(Role.class);
        Map<Role, Long> aborts = new EnumMap<>(Role.class);
        Map<Role, Double> consumed = new EnumMap<>(Role.class);
        Map<Role, Double> changed = new EnumMap<>(Role.class);
        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            marks.put(role, Journal.mark(endpoints.worker(role)));
            aborts.put(role, endpoints.status(role).aborts());
            consumed.put(role, consumed(role));
            changed.put(role, tombstoned(role) + aborted(role));
        }
        int records = topicKeys().size();

        assertThat(cancels("replay", "--since", "beginning")).isZero();

        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            double from = consumed.get(role);
            Awaitility.await("%s consumed the %d replayed records".formatted(role.shortName(), records))
                    .atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(50))
                    .until(() -> consumed(role) >= from + records);
            assertThat(endpoints.status(role).aborts()).as("%s aborted nothing new", role.shortName())
                    .isEqualTo(aborts.get(role));
            assertThat(tombstoned(role) + aborted(role)).as("%s: every replayed record was a no-op", role.shortName())
                    .isEqualTo(changed.get(role));
            Journal journal = Journal.since(endpoints.worker(role), marks.get(role));
            assertThat(journal.entries()).as("%s journal after the replay", role.shortName())
                    .noneMatch(e -> e.event().startsWith("CANCEL"));
        }

        Outcome after = client.start(StreamingClient.completion(endpoints.model(), prompt, 12, true),
                "dur-after-" + UUID.randomUUID()).outcome().get(2, TimeUnit.MINUTES);
        assertThat(after.completed()).as("%s", after).isTrue();
        assertThat(after.text()).as("the same greedy completion after the replay").isEqualTo(before.text());
        endpoints.awaitWorkersIdle();
    }

    /** {@code ripcord cancels <args> --kafka <this stack's broker>}, in-process; its exit code. */
    private static int cancels(String... args) {
        List<String> all = new ArrayList<>(List.of("cancels"));
        all.addAll(List.of(args));
        all.addAll(List.of("--kafka", broker.bootstrapServers()));
        return RipcordCli.run(all.toArray(String[]::new));
    }

    /** Waits until {@code role} consumed at least as many records as the topic holds, beyond {@code base}. */
    private static void awaitEveryRecordConsumed(Role role, double base) {
        int records = topicKeys().size();
        Awaitility.await("%s consumed all %d records of the topic".formatted(role.shortName(), records))
                .atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(50))
                .until(() -> consumed(role) >= base + records);
    }

    private static double consumed(Role role) {
        return Prometheus.scrape(endpoints.worker(role)).sum("ripcord_cancel_consumed_total");
    }

    private static double tombstoned(Role role) {
        return Prometheus.scrape(endpoints.worker(role)).sum("ripcord_cancel_consumed_total", "outcome", "tombstoned");
    }

    private static double aborted(Role role) {
        return Prometheus.scrape(endpoints.worker(role)).sum("ripcord_cancel_consumed_total", "outcome", "aborted");
    }

    /** The keys of every record in the cancellations topic, read from the start with a group-less consumer. */
    private static List<String> topicKeys() {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<String> keys = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            List<TopicPartition> partitions = consumer.partitionsFor(TOPIC).stream()
                    .map(p -> new TopicPartition(TOPIC, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < ends.get(p))) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    if (r.offset() < ends.get(new TopicPartition(r.topic(), r.partition()))) {
                        keys.add(new String(r.key(), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        return keys;
    }

    private static int freePort() {
        return dev.ripcord.stack.FreePorts.one();
    }
}
