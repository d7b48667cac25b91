package dev.ripcord.cli.cancels;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Clock;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.Origin;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.RequestIds;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.WakeupException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The operator's tools over the cancellations topic (docs/operations.md): {@code tail}, {@code publish},
 * {@code replay}, {@code dlq list|show|retry}. Plain kafka-clients, no consumer group, nothing committed: reading never
 * disturbs the services. Every event written is validated exactly as a worker validates it ({@code CancelEvent},
 * {@code CancelEventCodec}, {@code RequestIds}), and keyed by its request ID.
 *
 * <p>Exit codes: 0 done; 1 the command ran and something failed (a publish not acknowledged, a record that cannot be
 * retried); 2 usage (an invalid request ID or reason, a bad time); 3 the topic to read does not exist on that broker
 * ({@link MissingTopicException}; {@code tail}, which follows by default, waits for it instead).
 */
@Command(name = "cancels", mixinStandardHelpOptions = true,
        description = "Operator tools over the cancellations topic: tail, publish, replay, dlq.",
        subcommands = {CancelsCommand.Tail.class, CancelsCommand.Publish.class, CancelsCommand.Replay.class,
                DlqCommand.class})
public final class CancelsCommand implements Callable<Integer> {

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** Runs {@code body}, turning the expected failures into a message and an exit code. */
    static int guarded(CommandLine.Model.CommandSpec spec, Callable<Integer> body) {
        PrintWriter err = spec.commandLine().getErr();
        try {
            return body.call();
        } catch (MissingTopicException e) {
            err.println("ripcord " + spec.qualifiedName().replace("ripcord ", "") + ": " + e.getMessage());
            return MissingTopicException.EXIT_STATUS;
        } catch (IllegalArgumentException e) {
            err.println("ripcord " + spec.qualifiedName().replace("ripcord ", "") + ": " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("ripcord " + spec.qualifiedName().replace("ripcord ", "") + ": " + e.getMessage());
            return 1;
        }
    }

    @Command(name = "tail", mixinStandardHelpOptions = true,
            description = "Print cancellations as they are published (or a past window with --since), human or --json.")
    static final class Tail implements Callable<Integer> {

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;

        @Option(names = "--since", paramLabel = "T", description = "start at T (10m, 2h, or an ISO instant); default: now")
        String since;
        @Option(names = "--from-beginning", description = "start at the oldest record the topic still has")
        boolean fromBeginning;
        @Option(names = "--no-follow", description = "stop at the end of the topic as it was when the command started (a topic that "
                + "does not exist is then exit status 3; without it, tail waits for the topic to appear)")
        boolean noFollow;
        @Option(names = "--json", description = "one JSON object per line")
        boolean json;

        @Override
        public Integer call() {
            return guarded(spec, () -> {
                Instant from = since != null ? Since.parse(since, Instant.now())
                        : fromBeginning ? Instant.EPOCH : null;
                PrintWriter out = spec.commandLine().getOut();
                try (TopicReader reader = new TopicReader(kafka.clientConfig(), kafka.topic)) {
                    Thread main = Thread.currentThread();
                    Thread hook = new Thread(reader::wakeup, "ripcord-cancels-tail-stop");
                    if (!noFollow) {
                        Runtime.getRuntime().addShutdownHook(hook);
                    }
                    try {
                        reader.read(from, !noFollow, () -> {
                            spec.commandLine().getErr().println("ripcord cancels tail: topic " + kafka.topic
                                    + " does not exist yet on the broker at " + kafka.clientConfig().get("bootstrap.servers")
                                    + "; waiting for it (Ctrl-C to stop)");
                            spec.commandLine().getErr().flush();
                        }, record -> {
                            CancelRecords.Decoded d = CancelRecords.decode(record);
                            out.println(json ? CancelRecords.json(d) : CancelRecords.human(d));
                            out.flush();
                        });
                    } catch (WakeupException stopped) {
                        // Ctrl-C
                    }
                    if (main.isInterrupted()) {
                        return 1;
                    }
                }
                return 0;
            });
        }
    }

    @Command(name = "publish", mixinStandardHelpOptions = true,
            description = "Publish an operator cancel for one request, validated as every cancel is; returns once the "
                    + "broker acknowledged it (acks=all).")
    static final class Publish implements Callable<Integer> {

        /** Reasons a publisher may use: the others are never published (see CancelReason). */
        static final Set<CancelReason> PUBLISHABLE =
                EnumSet.complementOf(EnumSet.of(CancelReason.CONNECTION_CLOSED, CancelReason.UNKNOWN));

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;

        @Parameters(index = "0", paramLabel = "REQUEST_ID", description = "the request to cancel")
        String requestId;
        @Option(names = "--reason", required = true, paramLabel = "R",
                description = "why: one of CLIENT_CANCEL, CLIENT_DISCONNECT, DEADLINE, SHUTDOWN, UPSTREAM_ERROR, "
                        + "CLIENT_STALLED")
        String reason;

        @Override
        public Integer call() {
            return guarded(spec, () -> {
                CancelEvent event = operatorCancel(requestId, reason, Clock.systemUTC());
                try (KafkaProducer<byte[], byte[]> producer = CancelRecords.producer(kafka.clientConfig())) {
                    RecordMetadata at = CancelRecords.send(producer, CancelRecords.cancelRecord(kafka.topic, event));
                    spec.commandLine().getOut().printf("published %s (%s, origin %s) to %s-%d@%d%n",
                            event.requestId(), event.reason(), event.origin(), at.topic(), at.partition(), at.offset());
                }
                return 0;
            });
        }

        /** The event an operator publishes; {@link IllegalArgumentException} for an ID or reason no worker accepts. */
        static CancelEvent operatorCancel(String requestId, String reason, Clock clock) {
            if (!RequestIds.isValid(requestId)) {
                throw new IllegalArgumentException("invalid request ID: " + RequestIds.problemWith(requestId));
            }
            CancelReason r;
            try {
                r = CancelReason.valueOf(reason.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                r = null;
            }
            if (r == null || !PUBLISHABLE.contains(r)) {
                throw new IllegalArgumentException("--reason must be one of " + PUBLISHABLE + ", was '" + reason + "'");
            }
            return CancelEvent.now(requestId, r, operatorOrigin(), clock);
        }

        static Origin operatorOrigin() {
            String user = System.getProperty("user.name", "unknown");
            String host;
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (Exception e) {
                host = "localhost";
            }
            return new Origin("operator", user + "@" + host);
        }
    }

    @Command(name = "replay", mixinStandardHelpOptions = true,
            description = "Re-publish every cancel published since T, unchanged (same key, same event, same timestamp). "
                    + "Idempotent: a worker's registry treats a cancel it has seen as a no-op, and one older than its "
                    + "tombstone TTL as expired.")
    static final class Replay implements Callable<Integer> {

        @Spec
        CommandLine.Model.CommandSpec spec;
        @Mixin
        KafkaOptions kafka;

        @Option(names = "--since", required = true, paramLabel = "T",
                description = "replay records the broker accepted at or after T (10m, 2h, an ISO instant, or 'beginning')")
        String since;
        @Option(names = "--dry-run", description = "list what would be replayed, publish nothing")
        boolean dryRun;

        @Override
        public Integer call() {
            return guarded(spec, () -> {
                Instant from = "beginning".equalsIgnoreCase(since) ? Instant.EPOCH : Since.parse(since, Instant.now());
                PrintWriter out = spec.commandLine().getOut();
                AtomicInteger replayed = new AtomicInteger();
                AtomicInteger skipped = new AtomicInteger();
                java.util.List<java.util.concurrent.Future<RecordMetadata>> sent = new java.util.ArrayList<>();
                try (TopicReader reader = new TopicReader(kafka.clientConfig(), kafka.topic);
                     KafkaProducer<byte[], byte[]> producer = dryRun ? null
                             : CancelRecords.producer(kafka.clientConfig())) {
                    reader.read(from, false, record -> {
                        CancelRecords.Decoded d = CancelRecords.decode(record);
                        if (!d.valid()) {
                            skipped.incrementAndGet();
                            return;
                        }
                        if (dryRun) {
                            out.println(CancelRecords.human(d));
                        } else {
                            // The same bytes: the event keeps its own timestamp, so it ages from its first publish.
                            sent.add(producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(kafka.topic,
                                    record.key() != null ? record.key()
                                            : d.event().requestId().getBytes(java.nio.charset.StandardCharsets.UTF_8),
                                    record.value())));
                        }
                        replayed.incrementAndGet();
                    });
                    if (producer != null) {
                        producer.flush();
                    }
                }
                int failed = 0;
                for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                    try {
                        f.get();
                    } catch (java.util.concurrent.ExecutionException e) {
                        failed++;
                    }
                }
                if (failed > 0) {
                    spec.commandLine().getErr().printf("ripcord cancels replay: %d of %d publish(es) failed%n", failed,
                            sent.size());
                    return 1;
                }
                out.printf("%s %d cancel(s) published since %s to %s; %d unreadable record(s) skipped%n",
                        dryRun ? "would replay" : "replayed", replayed.get(), from, kafka.topic, skipped.get());
                return 0;
            });
        }
    }
}
