package dev.ripcord.stack.cancel;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.Origin;
import dev.ripcord.cli.RipcordCli;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.lifecycle.kafka.KafkaLifecycleSink;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.stack.KraftBroker;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ripcord audit} reading a real broker (an in-process KRaft broker, no services): the lifecycle topic as the
 * services create it, written by their Kafka sink, the cancellations topic, a record that is not a lifecycle event,
 * and the time range. The Kafka half of the audit, which the dump-based tests of ripcord-cli do not reach.
 */
class AuditFromKafkaTest {

    private static KraftBroker broker;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = KraftBroker.start(0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            // As the services declare it (LifecycleAutoConfiguration.topic, whose defaults docs/lifecycles.md lists).
            admin.createTopics(List.of(new NewTopic("ripcord.lifecycle", 3, (short) 1).configs(Map.of(
                            "cleanup.policy", "delete", "message.timestamp.type", "LogAppendTime")),
                    new NewTopic("ripcord.cancellations", 3, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
    }

    @AfterAll
    static void stopBroker() {
        broker.close();
    }

    private record Run(int exit, String out, String err) {
    }

    private static Run cli(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
        try {
            return new Run(RipcordCli.run(args), o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    private static final class Log {
        private final KafkaLifecycleSink sink = KafkaLifecycleSink.create(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()), "ripcord.lifecycle");
        private final Map<String, long[]> seqs = new java.util.HashMap<>();

        void send(String service, String instance, LifecycleEvent draft) {
            long seq = ++seqs.computeIfAbsent(instance, k -> new long[1])[0];
            sink.send(draft.stamped(service, instance, seq, Instant.now()));
        }
    }

    @Test
    void auditReadsBothTopicsOfTheBrokerSkipsAForeignRecordAndFindsAPlantedDoubleAbort() {
        Log log = new Log();
        String id = "kafka-audit-cancelled";
        log.send("gateway", "g1", LifecycleEvent.of(LifecycleEventType.ADMITTED, id));
        log.send("prefill", "p1", LifecycleEvent.of(LifecycleEventType.QUEUED, id));
        log.send("prefill", "p1", LifecycleEvent.of(LifecycleEventType.CANCEL_OBSERVED, id));
        log.send("prefill", "p1", LifecycleEvent.of(LifecycleEventType.ABORTED, id).withDetail("queued"));
        log.send("gateway", "g1", LifecycleEvent.of(LifecycleEventType.FINISHED, id)
                .withOutcome(LifecycleOutcome.CANCELLED));
        log.send("gateway", "g1", LifecycleEvent.of(LifecycleEventType.ADMITTED, "kafka-audit-served"));
        log.send("gateway", "g1", LifecycleEvent.of(LifecycleEventType.FINISHED, "kafka-audit-served")
                .withOutcome(LifecycleOutcome.COMPLETED));
        log.sink.close();
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
            producer.send(new ProducerRecord<>("ripcord.cancellations", id, CancelEventCodec.encode(
                    CancelEvent.of(id, CancelReason.CLIENT_DISCONNECT, new Origin("gateway", "g1"), Instant.now()))));
            producer.send(new ProducerRecord<>("ripcord.lifecycle", "x", "not a lifecycle event"
                    .getBytes(StandardCharsets.UTF_8)));
        }

        Run clean = cli("audit", "--since", "10m", "--kafka", broker.bootstrapServers(), "--in-flight-grace", "0s");
        assertThat(clean.exit()).as("%s%s", clean.out(), clean.err()).isZero();
        assertThat(clean.out()).contains("2 requests {CANCELLED=1, COMPLETED=1}")
                .contains("cancels: 1 {CLIENT_DISCONNECT=1}").contains("skipped 1 unreadable record(s)")
                .contains("ripcord.lifecycle[");

        Log more = new Log();
        more.seqs.put("p1", new long[] {3}); // p1's events continue its sequence
        more.send("prefill", "p1", LifecycleEvent.of(LifecycleEventType.ABORTED, id).withDetail("queued"));
        more.sink.close();

        Run planted = cli("audit", "--since", "10m", "--kafka", broker.bootstrapServers(), "--in-flight-grace", "0s");
        assertThat(planted.exit()).as("%s%s", planted.out(), planted.err()).isEqualTo(1);
        assertThat(planted.out()).contains("VIOLATION AT_MOST_ONE_ABORT requestId=" + id);

        Run before = cli("audit", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T01:00:00Z", "--kafka",
                broker.bootstrapServers());
        // A window with nothing in it is not a pass: nothing was audited.
        assertThat(before.exit()).isEqualTo(1);
        assertThat(before.out()).contains("0 events, 0 requests").contains("ERROR: the window holds no lifecycle event");
    }
}
