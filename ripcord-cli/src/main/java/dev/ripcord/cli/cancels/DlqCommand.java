package dev.ripcord.cli.cancels;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.InvalidCancelEventException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ripcord cancels dlq list|show|retry}: the dead-letter topic, where a worker puts a record it could not read
 * (raw bytes kept). Its headers are read by Spring Kafka's standard names ({@code kafka_dlt-original-topic},
 * {@code -partition}, {@code -offset}, {@code kafka_dlt-exception-message}, ...; {@code KafkaHeaders.DLT_*}) and by the
 * older {@code ripcord-dlt-*} ones, whichever a record has.
 */
@Command(name = "dlq", mixinStandardHelpOptions = true,
        description = "The dead-letter topic: list, show, retry.",
        subcommands = {DlqCommand.ListRecords.class, DlqCommand.Show.class, DlqCommand.Retry.class})
public final class DlqCommand implements Callable<Integer> {

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** What a dead letter says about itself, whichever header convention wrote it. */
    record DeadLetter(ConsumerRecord<byte[], byte[]> record, String originalTopic, Integer originalPartition,
                      Long originalOffset, String reason, String detail, String instance) {

        static DeadLetter of(ConsumerRecord<byte[], byte[]> record) {
            return new DeadLetter(record,
                    firstText(record, "kafka_dlt-original-topic", "ripcord-dlt-original-topic"),
                    (Integer) firstNumber(record, true, "kafka_dlt-original-partition", "ripcord-dlt-original-partition"),
                    (Long) firstNumber(record, false, "kafka_dlt-original-offset", "ripcord-dlt-original-offset"),
                    firstText(record, "ripcord-dlt-reason", "kafka_dlt-exception-fqcn"),
                    firstText(record, "kafka_dlt-exception-message", "ripcord-dlt-detail"),
                    firstText(record, "ripcord-dlt-instance", "kafka_dlt-original-consumer-group"));
        }

        String coordinates() {
            return "p" + record.partition() + "@" + record.offset();
        }

        String original() {
            return (originalTopic == null ? "?" : originalTopic) + "-" + (originalPartition == null ? "?" : originalPartition)
                    + "@" + (originalOffset == null ? "?" : originalOffset);
        }
    }

    static String firstText(ConsumerRecord<byte[], byte[]> record, String... names) {
        for (String name : names) {
            Header h = record.headers().lastHeader(name);
            if (h != null && h.value() != null) {
                return new String(h.value(), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** Spring Kafka writes partitions as 4-byte and offsets as 8-byte big-endian numbers; ripcord-dlt-* as text. */
    static Number firstNumber(ConsumerRecord<byte[], byte[]> record, boolean integer, String... names) {
        for (String name : names) {
            Header h = record.headers().lastHeader(name);
            if (h == null || h.value() == null) {
                continue;
            }
            byte[] v = h.value();
            if (name.startsWith("kafka_dlt-") && v.length == 4) {
                int n = ByteBuffer.wrap(v).getInt();
                return integer ? (Number) n : (Number) (long) n;
            }
            if (name.startsWith("kafka_dlt-") && v.length == 8) {
                long n = ByteBuffer.wrap(v).getLong();
                return integer ? (Number) (int) n : (Number) n;
            }
            try {
                String text = new String(v, StandardCharsets.UTF_8).trim();
                return integer ? (Number) Integer.parseInt(text) : (Number) Long.parseLong(text);
            } catch (NumberFormatException e) {
                // try the next name
            }
        }
        return null;
    }

    /** {@code P@O} (or {@code O} on partition 0). */
    static long[] coordinates(String text) {
        try {
            int at = text.indexOf('@');
            String p = at < 0 ? "0" : text.substring(0, at).replaceFirst("^p", "");
            return new long[] {Integer.parseInt(p), Long.parseLong(text.substring(at + 1))};
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("'" + text + "' is not PARTITION@OFFSET (e.g. 0@12, as dlq list prints)");
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "One line per dead letter.")
    static final class ListRecords implements Callable<Integer> {

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;
        @Option(names = "--since", paramLabel = "T", description = "only dead letters since T (default: all)")
        String since;
        @Option(names = "--json", description = "one JSON object per line")
        boolean json;

        @Override
        public Integer call() {
            return CancelsCommand.guarded(spec, () -> {
                Instant from = since == null ? null : Since.parse(since, Instant.now());
                var out = spec.commandLine().getOut();
                AtomicInteger count = new AtomicInteger();
                try (TopicReader reader = new TopicReader(kafka.clientConfig(), kafka.dltTopic)) {
                    reader.read(from, false, record -> {
                        DeadLetter d = DeadLetter.of(record);
                        count.incrementAndGet();
                        if (json) {
                            var node = CancelRecords.JSON.createObjectNode();
                            node.put("at", d.coordinates());
                            node.put("recordTimestamp", Instant.ofEpochMilli(record.timestamp()).toString());
                            node.put("original", d.original());
                            node.put("key", CancelRecords.text(record.key()));
                            node.put("reason", d.reason());
                            node.put("detail", d.detail());
                            out.println(CancelRecords.JSON.writeValueAsString(node));
                        } else {
                            out.printf("%-8s %s  from %s  %s  %s%n", d.coordinates(),
                                    Instant.ofEpochMilli(record.timestamp()), d.original(), d.reason(),
                                    d.detail() == null ? "" : d.detail());
                        }
                    });
                }
                if (!json) {
                    out.printf("%d dead letter(s) in %s%n", count.get(), kafka.dltTopic);
                }
                return 0;
            });
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true,
            description = "One dead letter in full: headers, bytes, and what is wrong with it today.")
    static final class Show implements Callable<Integer> {

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;
        @Parameters(paramLabel = "P@O", description = "the dead letter's partition@offset, as dlq list prints it")
        String at;

        @Override
        public Integer call() {
            return CancelsCommand.guarded(spec, () -> {
                long[] c = coordinates(at);
                var out = spec.commandLine().getOut();
                try (TopicReader reader = new TopicReader(kafka.clientConfig(), kafka.dltTopic)) {
                    ConsumerRecord<byte[], byte[]> record = reader.readOne((int) c[0], c[1]);
                    if (record == null) {
                        throw new IllegalStateException("no record at " + kafka.dltTopic + "-" + c[0] + "@" + c[1]);
                    }
                    DeadLetter d = DeadLetter.of(record);
                    out.println("dead letter  " + kafka.dltTopic + "-" + d.coordinates() + "  at "
                            + Instant.ofEpochMilli(record.timestamp()));
                    out.println("original     " + d.original());
                    out.println("key          " + CancelRecords.text(record.key()));
                    for (Header h : record.headers()) {
                        out.println("header       " + h.key() + " = " + printable(h));
                    }
                    out.println("value        " + CancelRecords.text(record.value()));
                    out.println("today        " + verdict(record));
                }
                return 0;
            });
        }

        private static String printable(Header h) {
            if (h.value() == null) {
                return "null";
            }
            if (h.key().startsWith("kafka_dlt-") && (h.value().length == 4 || h.value().length == 8)
                    && !h.key().endsWith("-message") && !h.key().endsWith("-topic")) {
                return String.valueOf(h.value().length == 4 ? ByteBuffer.wrap(h.value()).getInt()
                        : ByteBuffer.wrap(h.value()).getLong());
            }
            String text = new String(h.value(), StandardCharsets.UTF_8);
            return text.length() > 300 ? text.substring(0, 300) + "..." : text;
        }
    }

    /** Whether the record would be accepted now, and if not why (the codec may have learned something since). */
    static String verdict(ConsumerRecord<byte[], byte[]> record) {
        try {
            CancelEvent event = retryable(record);
            return "valid now: " + event.requestId() + " " + event.reason() + " (dlq retry re-publishes it)";
        } catch (InvalidCancelEventException e) {
            return "still invalid: " + e.problem() + ": " + e.getMessage();
        }
    }

    static CancelEvent retryable(ConsumerRecord<byte[], byte[]> record) {
        if (record.value() == null) {
            throw new InvalidCancelEventException(InvalidCancelEventException.Problem.NOT_JSON, "null value");
        }
        CancelEvent event = CancelEventCodec.decode(record.value());
        String key = firstText(record, "ripcord-dlt-original-key");
        if (key == null && record.key() != null) {
            String dltKey = new String(record.key(), StandardCharsets.UTF_8);
            key = dltKey.equals(event.requestId()) ? dltKey : null;
        }
        if (key != null && !key.equals(event.requestId())) {
            throw new InvalidCancelEventException(InvalidCancelEventException.Problem.KEY_MISMATCH,
                    "original key '" + key + "' is not the request ID");
        }
        return event;
    }

    @Command(name = "retry", mixinStandardHelpOptions = true,
            description = "Re-publish dead letters that are valid cancels now (validated exactly as a worker does), "
                    + "keyed by their request ID. A record still invalid is reported and left where it is.")
    static final class Retry implements Callable<Integer> {

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;
        @Parameters(paramLabel = "P@O", arity = "0..*", description = "dead letters to retry, as dlq list prints them")
        List<String> at = new ArrayList<>();
        @Option(names = "--all", description = "every dead letter in the topic")
        boolean all;

        @Override
        public Integer call() {
            return CancelsCommand.guarded(spec, () -> {
                if (all == !at.isEmpty()) {
                    throw new IllegalArgumentException("name dead letters as P@O, or give --all (not both)");
                }
                var out = spec.commandLine().getOut();
                Map<String, ConsumerRecord<byte[], byte[]>> records = new LinkedHashMap<>();
                try (TopicReader reader = new TopicReader(kafka.clientConfig(), kafka.dltTopic)) {
                    if (all) {
                        reader.read(null, false, r -> records.put("p" + r.partition() + "@" + r.offset(), r));
                    } else {
                        for (String a : at) {
                            long[] c = coordinates(a);
                            ConsumerRecord<byte[], byte[]> r = reader.readOne((int) c[0], c[1]);
                            if (r == null) {
                                throw new IllegalStateException("no record at " + kafka.dltTopic + "-" + c[0] + "@" + c[1]);
                            }
                            records.put("p" + c[0] + "@" + c[1], r);
                        }
                    }
                }
                int retried = 0;
                int invalid = 0;
                try (KafkaProducer<byte[], byte[]> producer = CancelRecords.producer(kafka.clientConfig())) {
                    for (var e : records.entrySet()) {
                        CancelEvent event;
                        try {
                            event = retryable(e.getValue());
                        } catch (InvalidCancelEventException bad) {
                            invalid++;
                            out.printf("%s still invalid (%s: %s); left in %s%n", e.getKey(), bad.problem(),
                                    bad.getMessage(), kafka.dltTopic);
                            continue;
                        }
                        RecordMetadata m = CancelRecords.send(producer, new ProducerRecord<>(kafka.topic,
                                event.requestId().getBytes(StandardCharsets.UTF_8), e.getValue().value()));
                        retried++;
                        out.printf("%s re-published %s (%s) to %s-%d@%d%n", e.getKey(), event.requestId(),
                                event.reason(), m.topic(), m.partition(), m.offset());
                    }
                }
                out.printf("retried %d, still invalid %d%n", retried, invalid);
                return invalid == 0 ? 0 : 1;
            });
        }
    }
}
