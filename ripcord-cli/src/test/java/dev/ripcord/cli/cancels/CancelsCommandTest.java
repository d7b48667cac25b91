package dev.ripcord.cli.cancels;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.InstanceOfAssertFactories.STRING;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cli.RipcordCli;
import dev.ripcord.protocol.CancelReason;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;
import picocli.CommandLine;

/** The cancels commands against a real broker: what they write is what a worker reads, and nothing else. */
@EmbeddedKafka
class CancelsCommandTest {

    private static final AtomicInteger TOPICS = new AtomicInteger();

    private String bootstrap;
    private String topic;
    private String dlt;
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @BeforeEach
    void topics() throws Exception {
        bootstrap = EmbeddedKafkaCondition.getBroker().getBrokersAsString();
        int n = TOPICS.incrementAndGet();
        topic = "cancels-" + n;
        dlt = "cancels-" + n + ".dlt";
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1), new NewTopic(dlt, 1, (short) 1))).all().get();
        }
        // The controller has the topics; wait until the broker a reader asks knows them too (its metadata follows).
        awaitVisible(topic, 3);
        awaitVisible(dlt, 1);
    }

    private void awaitVisible(String name, int partitions) throws InterruptedException {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of("bootstrap.servers", bootstrap,
                "allow.auto.create.topics", "false", "key.deserializer", ByteArrayDeserializer.class.getName(),
                "value.deserializer", ByteArrayDeserializer.class.getName()))) {
            for (int i = 0; i < 300; i++) {
                List<PartitionInfo> infos = consumer.partitionsFor(name);
                if (infos != null && infos.size() == partitions) {
                    return;
                }
                Thread.sleep(100);
            }
        }
        throw new AssertionError("topic " + name + " never became visible to a consumer of " + bootstrap);
    }

    private int cancels(String... args) {
        CommandLine cli = new CommandLine(new RipcordCli());
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(List.of("cancels"));
        all.addAll(List.of(args));
        return cli.execute(all.toArray(String[]::new));
    }

    private String[] kafka(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--kafka", bootstrap, "--topic", topic, "--dlt-topic", dlt));
        return all.toArray(String[]::new);
    }

    private List<ConsumerRecord<byte[], byte[]>> records(String name) {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (TopicReader reader = new TopicReader(Map.of("bootstrap.servers", bootstrap), name)) {
            reader.read(null, false, records::add);
        }
        return records;
    }

    @Test
    void anOperatorCancelIsAValidCancelKeyedByItsRequestIdAndTailShowsIt() {
        assertThat(cancels(kafka("publish", "req-op-1", "--reason", "client_cancel"))).isZero();

        List<ConsumerRecord<byte[], byte[]>> records = records(topic);
        assertThat(records).hasSize(1);
        CancelEvent event = CancelEventCodec.decode(records.getFirst().value());
        assertThat(new String(records.getFirst().key(), UTF_8)).isEqualTo("req-op-1");
        assertThat(event.requestId()).isEqualTo("req-op-1");
        assertThat(event.reason()).isEqualTo(CancelReason.CLIENT_CANCEL);
        assertThat(event.origin().service()).isEqualTo("operator");

        assertThat(cancels(kafka("tail", "--from-beginning", "--no-follow", "--json"))).isZero();
        assertThat(out.toString()).contains("\"key\":\"req-op-1\"").contains("\"reason\":\"CLIENT_CANCEL\"")
                .contains("\"service\":\"operator\"");
    }

    @Test
    void aPublishNoWorkerWouldAcceptIsRefusedAndNothingIsWritten() {
        assertThat(cancels(kafka("publish", "req 1", "--reason", "CLIENT_CANCEL"))).isEqualTo(2);
        assertThat(cancels(kafka("publish", "req-1", "--reason", "CONNECTION_CLOSED"))).isEqualTo(2);
        assertThat(cancels(kafka("publish", "req-1", "--reason", "BECAUSE"))).isEqualTo(2);
        assertThat(err.toString()).contains("invalid request ID").contains("--reason must be one of");
        assertThat(records(topic)).isEmpty();
    }

    @Test
    void aRefusedPublishDoesNotEvenCreateTheTopic() {
        String fresh = "cancels-never-" + TOPICS.incrementAndGet();
        assertThat(cancels("publish", "req 1", "--reason", "CLIENT_CANCEL", "--kafka", bootstrap, "--topic", fresh))
                .isEqualTo(2);
        assertThat(cancels("tail", "--no-follow", "--kafka", bootstrap, "--topic", fresh))
                .isEqualTo(MissingTopicException.EXIT_STATUS);
        assertThat(err.toString()).contains("topic " + fresh + " does not exist on the broker at " + bootstrap);
    }

    @Test
    void readingATopicThatDoesNotExistIsOneLineAndExitStatusThreeNeverAStackTrace() {
        String missing = "cancels-missing-" + TOPICS.incrementAndGet();
        String missingDlt = missing + ".dlt";
        List<String[]> commands = List.of(
                new String[] {"tail", "--no-follow"}, new String[] {"tail", "--from-beginning", "--no-follow"},
                new String[] {"replay", "--since", "beginning"}, new String[] {"replay", "--since", "10m", "--dry-run"},
                new String[] {"dlq", "list"}, new String[] {"dlq", "show", "0@0"}, new String[] {"dlq", "retry", "--all"});
        for (String[] command : commands) {
            err.getBuffer().setLength(0);
            List<String> args = new ArrayList<>(List.of(command));
            args.addAll(List.of("--kafka", bootstrap, "--topic", missing, "--dlt-topic", missingDlt));
            assertThat(cancels(args.toArray(String[]::new))).as(String.join(" ", command))
                    .isEqualTo(MissingTopicException.EXIT_STATUS);
            String expected = command[0].equals("dlq") ? missingDlt : missing;
            assertThat(err.toString().lines().toList()).as(String.join(" ", command)).singleElement(as(STRING))
                    .startsWith("ripcord cancels " + String.join(" ", command[0].equals("dlq")
                            ? List.of(command[0], command[1]) : List.of(command[0])) + ": topic " + expected
                            + " does not exist on the broker at " + bootstrap);
        }
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void aFollowingTailWaitsForATopicThatDoesNotExistYetAndPrintsWhatItGets() throws Exception {
        String later = "cancels-later-" + TOPICS.incrementAndGet();
        AtomicInteger status = new AtomicInteger(-1);
        Thread tail = Thread.ofPlatform().name("tail-" + later).start(() -> status.set(
                cancels("tail", "--json", "--kafka", bootstrap, "--topic", later)));
        try {
            for (int i = 0; i < 300 && !err.toString().contains("waiting for it"); i++) {
                Thread.sleep(100);
            }
            assertThat(err.toString()).contains("topic " + later + " does not exist yet on the broker at " + bootstrap)
                    .contains("waiting for it");
            assertThat(status).as("still waiting").hasValue(-1);

            assertThat(cancels("publish", "req-late-1", "--reason", "CLIENT_CANCEL", "--kafka", bootstrap,
                    "--topic", later)).isZero(); // the broker creates the topic on this first write
            for (int i = 0; i < 300 && !out.toString().contains("\"key\":\"req-late-1\""); i++) {
                Thread.sleep(100);
            }
            assertThat(out.toString()).contains("\"key\":\"req-late-1\"").contains("\"reason\":\"CLIENT_CANCEL\"");
        } finally {
            tail.interrupt();
            tail.join(30_000);
        }
        assertThat(tail.isAlive()).isFalse();
    }

    @Test
    void replayRepublishesTheWindowByteForByteAndSkipsUnreadableRecords() throws Exception {
        Instant old = Instant.now().minusSeconds(3600);
        byte[] first = CancelEventCodec.encode(CancelEvent.of("req-r1", CancelReason.DEADLINE, new Origin("gateway", "g1"), old));
        byte[] second = CancelEventCodec.encode(CancelEvent.of("req-r2", CancelReason.CLIENT_DISCONNECT,
                new Origin("gateway", "g1"), Instant.now()));
        try (KafkaProducer<byte[], byte[]> producer = CancelRecords.producer(Map.of("bootstrap.servers", bootstrap))) {
            producer.send(new ProducerRecord<>(topic, "req-r1".getBytes(UTF_8), first)).get();
            producer.send(new ProducerRecord<>(topic, "req-r2".getBytes(UTF_8), second)).get();
            producer.send(new ProducerRecord<>(topic, "req-r3".getBytes(UTF_8), "garbage".getBytes(UTF_8))).get();
        }

        assertThat(cancels(kafka("replay", "--since", "beginning"))).isZero();

        assertThat(out.toString()).contains("replayed 2 cancel(s)").contains("1 unreadable record(s) skipped");
        List<ConsumerRecord<byte[], byte[]>> records = records(topic);
        assertThat(records).hasSize(5);
        assertThat(records.stream().filter(r -> new String(r.key(), UTF_8).equals("req-r1")).map(ConsumerRecord::value))
                .hasSize(2).allSatisfy(v -> assertThat(v).isEqualTo(first));
        assertThat(records.stream().filter(r -> new String(r.key(), UTF_8).equals("req-r2")).map(ConsumerRecord::value))
                .hasSize(2).allSatisfy(v -> assertThat(v).isEqualTo(second));
    }

    @Test
    void dlqReadsStandardAndOlderHeadersAndRetriesOnlyWhatIsValidNow() throws Exception {
        byte[] valid = CancelEventCodec.encode(CancelEvent.of("req-d1", CancelReason.DEADLINE,
                new Origin("gateway", "g1"), Instant.now()));
        ProducerRecord<byte[], byte[]> standard = new ProducerRecord<>(dlt, "req-d1".getBytes(UTF_8), valid);
        standard.headers().add(new RecordHeader("kafka_dlt-original-topic", topic.getBytes(UTF_8)));
        standard.headers().add(new RecordHeader("kafka_dlt-original-partition", ByteBuffer.allocate(4).putInt(2).array()));
        standard.headers().add(new RecordHeader("kafka_dlt-original-offset", ByteBuffer.allocate(8).putLong(41).array()));
        standard.headers().add(new RecordHeader("kafka_dlt-exception-message", "unknown reason 'X'".getBytes(UTF_8)));
        ProducerRecord<byte[], byte[]> older = new ProducerRecord<>(dlt, (topic + "-0@7").getBytes(UTF_8),
                "<html>oops</html>".getBytes(UTF_8));
        older.headers().add(new RecordHeader("ripcord-dlt-original-topic", topic.getBytes(UTF_8)));
        older.headers().add(new RecordHeader("ripcord-dlt-original-partition", "0".getBytes(UTF_8)));
        older.headers().add(new RecordHeader("ripcord-dlt-original-offset", "7".getBytes(UTF_8)));
        older.headers().add(new RecordHeader("ripcord-dlt-original-key", "req-d2".getBytes(UTF_8)));
        older.headers().add(new RecordHeader("ripcord-dlt-reason", "NOT_JSON".getBytes(UTF_8)));
        try (KafkaProducer<byte[], byte[]> producer = CancelRecords.producer(Map.of("bootstrap.servers", bootstrap))) {
            producer.send(standard).get();
            producer.send(older).get();
        }

        assertThat(cancels(kafka("dlq", "list"))).isZero();
        assertThat(out.toString()).contains("p0@0").contains("from " + topic + "-2@41").contains("unknown reason 'X'")
                .contains("p0@1").contains("from " + topic + "-0@7").contains("NOT_JSON")
                .contains("2 dead letter(s)");

        assertThat(cancels(kafka("dlq", "show", "0@1"))).isZero();
        assertThat(out.toString()).contains("still invalid: NOT_JSON");

        assertThat(cancels(kafka("dlq", "retry", "--all"))).as("one record is still invalid").isEqualTo(1);
        assertThat(out.toString()).contains("retried 1, still invalid 1");
        List<ConsumerRecord<byte[], byte[]>> retried = records(topic);
        assertThat(retried).hasSize(1);
        assertThat(new String(retried.getFirst().key(), UTF_8)).isEqualTo("req-d1");
        assertThat(retried.getFirst().value()).isEqualTo(valid);
        assertThat(records(dlt)).as("dead letters stay where they are").hasSize(2);
    }

    @Test
    void theBrokerComesFromTheFlagTheServicesEnvironmentOrTheLocalStackStateFile(@TempDir Path repo) throws Exception {
        Path nested = Files.createDirectories(repo.resolve("a/b"));
        KafkaOptions options = new KafkaOptions();
        assertThat(options.bootstrap(Map.of(), nested)).isEqualTo("localhost:9092");
        Files.createDirectories(repo.resolve(".ripcord"));
        Files.writeString(repo.resolve(".ripcord/stack.json"),
                "{\"schemaVersion\":1,\"pid\":1,\"kafka\":\"localhost:19092\",\"instances\":[]}");
        assertThat(options.bootstrap(Map.of(), nested)).isEqualTo("localhost:19092");
        assertThat(options.bootstrap(Map.of("SPRING_KAFKA_BOOTSTRAP_SERVERS", "kafka-1:9093"), nested))
                .isEqualTo("kafka-1:9093");
        options.kafka = "other:9092";
        assertThat(options.bootstrap(Map.of("SPRING_KAFKA_BOOTSTRAP_SERVERS", "kafka-1:9093"), nested))
                .isEqualTo("other:9092");
    }

    @Test
    void kafkaSecurityIsTakenFromTheServicesSpringKafkaEnvironment() {
        Map<String, Object> config = KafkaOptions.fromSpringEnvironment(Map.of(
                "SPRING_KAFKA_SECURITY_PROTOCOL", "SASL_SSL",
                "SPRING_KAFKA_SSL_TRUST_STORE_LOCATION", "file:/etc/ripcord/kafka-truststore.p12",
                "SPRING_KAFKA_SSL_TRUST_STORE_PASSWORD", "changeit",
                "SPRING_KAFKA_SSL_TRUST_STORE_TYPE", "PKCS12",
                "SPRING_KAFKA_PROPERTIES_SASL_MECHANISM", "SCRAM-SHA-512",
                "SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG", "x required;"));
        assertThat(config).containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("ssl.truststore.location", "/etc/ripcord/kafka-truststore.p12")
                .containsEntry("ssl.truststore.password", "changeit")
                .containsEntry("ssl.truststore.type", "PKCS12")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                .containsEntry("sasl.jaas.config", "x required;");
    }

    @Test
    void sinceTakesDurationsAndInstants() {
        Instant now = Instant.parse("2026-12-01T12:00:00Z");
        assertThat(Since.parse("10m", now)).isEqualTo(Instant.parse("2026-12-01T11:50:00Z"));
        assertThat(Since.parse("2h", now)).isEqualTo(Instant.parse("2026-12-01T10:00:00Z"));
        assertThat(Since.parse("2026-12-01T11:00:00Z", now)).isEqualTo(Instant.parse("2026-12-01T11:00:00Z"));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Since.parse("yesterday", now))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
