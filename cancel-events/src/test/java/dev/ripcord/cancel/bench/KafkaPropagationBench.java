package dev.ripcord.cancel.bench;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.Registration;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.RequestIds;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * Kafka cancel propagation as figures: publish → observation at a consuming worker, over the services' own code path
 * and settings. Each variant is a publish-only "gateway" and a consuming "worker", two Spring Boot contexts built from
 * this library's auto-configuration exactly as the services build theirs ({@code CancelBindingDefaults},
 * {@code KafkaSendQueue}, {@code StreamBridge}, the binder's listener container, {@code CancelEventConsumer},
 * {@code CancellationRegistry}), each variant on a topic of its own on one embedded KRaft broker (or {@code --brokers}).
 *
 * <p>One sample: register a fresh request ID in the worker's registry, take {@code System.nanoTime()}, call
 * {@link CancelPublisher#publish}; the worker's abort handler takes {@code System.nanoTime()} again when the consumed
 * record aborts the registration (both contexts run in this JVM, so both clocks are one). Also printed: publish → broker
 * ack (the producer leg, as the publisher's future completes). Variants are interleaved: every round sends one cancel
 * per variant, in a shuffled order, each after the previous one was observed, then sleeps {@code --interval-ms}
 * (paced, like real cancels, not a throughput test). So a busy machine hurts every variant alike.
 *
 * <p>Variants: {@code shipped} (no overrides: what the services run), {@code previous} (the settings the services
 * ran before their cancel-latency tuning: Kafka's 5-minute {@code metadata.max.idle.ms}, the cancel output bound on the first send),
 * {@code raw-client} (the floor: a bare {@code KafkaProducer} and an {@code assign}ing {@code KafkaConsumer}, no
 * Spring), plus any named with {@code --set}. Before the rounds, each variant's first cancel after its contexts
 * started is printed; the variant that goes first also pays this JVM's class loading for the whole path, so compare
 * first cancels across runs with the order swapped ({@code --variants}). Not a test: asserts nothing, prints
 * figures.
 */
public final class KafkaPropagationBench {

    static final String USAGE = usage();

    /** From {@code KafkaPropagationBench.usage.txt}, which {@code ./ripcord bench kafka --help} prints unbuilt. */
    private static String usage() {
        try (java.io.InputStream in = KafkaPropagationBench.class.getResourceAsStream("KafkaPropagationBench.usage.txt")) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).stripTrailing();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static final String OUTPUT = "spring.cloud.stream.kafka.bindings.ripcordCancel-out-0.producer.";

    /**
     * What the cancel-latency tuning changed, as it was before: the producer's topic metadata dropped after 5 idle minutes, and the
     * cancel output bound lazily. Kept here, not guessed, so that {@code previous} keeps meaning "before" as defaults
     * move.
     */
    static final Map<String, String> PREVIOUS = previous();

    private static Map<String, String> previous() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(OUTPUT + "configuration.metadata.max.idle.ms", "300000");
        p.put("spring.cloud.stream.output-bindings", ""); // the cancel output bound on the first send again
        return Collections.unmodifiableMap(p);
    }

    /** One thing measured: publishes one cancel and says when it was observed and acknowledged. */
    private interface Variant extends AutoCloseable {

        String name();

        /** {publish → observed, publish → ack} in nanoseconds, or null if it was not observed in time. */
        long[] once(long timeoutMillis) throws Exception;

        List<Long> observed();

        List<Long> acked();

        @Override
        void close();
    }

    /** One gateway/worker pair with its own topic: the services' path. */
    private record ServicePair(String name, ConfigurableApplicationContext gateway,
                               ConfigurableApplicationContext worker, List<Long> observed, List<Long> acked)
            implements Variant {

        @Override
        public long[] once(long timeoutMillis) throws Exception {
            String id = RequestIds.newId();
            CompletableFuture<Long> seen = new CompletableFuture<>();
            Registration registration = worker.getBean(CancellationRegistry.class).register(id,
                    (requestId, reason, source) -> seen.complete(System.nanoTime()));
            try {
                long start = System.nanoTime();
                CompletableFuture<Long> ack = gateway.getBean(CancelPublisher.class)
                        .publish(id, CancelReason.CLIENT_DISCONNECT)
                        .thenApply(ignored -> System.nanoTime());
                long observedAt = seen.get(timeoutMillis, TimeUnit.MILLISECONDS);
                long ackedAt = ack.get(timeoutMillis, TimeUnit.MILLISECONDS);
                return new long[] {observedAt - start, ackedAt - start};
            } catch (TimeoutException e) {
                return null;
            } finally {
                registration.complete();
            }
        }

        @Override
        public void close() {
            gateway.close();
            worker.close();
        }
    }

    /**
     * The floor: a bare {@code KafkaProducer} ({@code linger.ms=0}, {@code acks=all}) and a bare {@code KafkaConsumer}
     * that {@code assign}s the topic's partitions and polls in a loop, no Spring at all, on the same broker.
     */
    private static final class RawClients implements Variant {

        private final String topic;
        private final KafkaProducer<String, byte[]> producer;
        private final KafkaConsumer<String, byte[]> consumer;
        private final Map<String, CompletableFuture<Long>> waiting = new ConcurrentHashMap<>();
        private final Thread poller;
        private final List<Long> observed = new ArrayList<>();
        private final List<Long> acked = new ArrayList<>();
        private volatile boolean running = true;

        RawClients(String brokers, String topic, int partitions) throws Exception {
            this.topic = topic;
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers))) {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers,
                    ProducerConfig.LINGER_MS_CONFIG, 0, ProducerConfig.ACKS_CONFIG, "all"),
                    new StringSerializer(), new ByteArraySerializer());
            consumer = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers),
                    new StringDeserializer(), new ByteArrayDeserializer());
            List<TopicPartition> assigned = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                assigned.add(new TopicPartition(topic, p));
            }
            consumer.assign(assigned);
            consumer.seekToEnd(assigned);
            assigned.forEach(consumer::position);
            poller = new Thread(this::poll, "raw-client-poller");
            poller.setDaemon(true);
            poller.start();
        }

        private void poll() {
            while (running) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                    CompletableFuture<Long> seen = waiting.remove(record.key());
                    if (seen != null) {
                        seen.complete(System.nanoTime());
                    }
                }
            }
            consumer.close();
        }

        @Override
        public String name() {
            return "raw-client";
        }

        @Override
        public long[] once(long timeoutMillis) throws Exception {
            String id = RequestIds.newId();
            CompletableFuture<Long> seen = new CompletableFuture<>();
            waiting.put(id, seen);
            try {
                long start = System.nanoTime();
                CompletableFuture<Long> ack = new CompletableFuture<>();
                producer.send(new ProducerRecord<>(topic, id, id.getBytes(StandardCharsets.UTF_8)),
                        (metadata, error) -> ack.complete(System.nanoTime()));
                long observedAt = seen.get(timeoutMillis, TimeUnit.MILLISECONDS);
                return new long[] {observedAt - start, ack.get(timeoutMillis, TimeUnit.MILLISECONDS) - start};
            } catch (TimeoutException e) {
                return null;
            } finally {
                waiting.remove(id);
            }
        }

        @Override
        public List<Long> observed() {
            return observed;
        }

        @Override
        public List<Long> acked() {
            return acked;
        }

        @Override
        public void close() {
            running = false;
            producer.close();
            try {
                poller.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** An application with nothing but the cancel library, as each service has it. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Service {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, Map<String, String>> sets = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println(USAGE);
                System.exit(2);
            }
            String key = arg.substring(2, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("set")) {
                int colon = value.indexOf(':');
                int kv = value.indexOf('=');
                if (colon < 0 || kv < colon) {
                    System.err.println(USAGE);
                    System.exit(2);
                }
                sets.computeIfAbsent(value.substring(0, colon), v -> new LinkedHashMap<>())
                        .put(value.substring(colon + 1, kv), value.substring(kv + 1));
            } else {
                options.put(key, value);
            }
        }
        int n = Integer.parseInt(options.getOrDefault("n", "1000"));
        int warmup = Integer.parseInt(options.getOrDefault("warmup", "200"));
        long intervalMillis = Long.parseLong(options.getOrDefault("interval-ms", "10"));
        long timeoutMillis = Long.parseLong(options.getOrDefault("timeout-ms", "10000"));
        List<String> names = new ArrayList<>(Arrays.asList(options.getOrDefault("variants", "shipped,previous,raw-client")
                .split(",")));
        sets.keySet().stream().filter(name -> !names.contains(name)).forEach(names::add);

        PrintStream out = System.out;
        EmbeddedKafkaKraftBroker embedded = null;
        String brokers = options.get("brokers");
        if (brokers == null) {
            embedded = new EmbeddedKafkaKraftBroker(1, 3);
            embedded.brokerProperty("group.initial.rebalance.delay.ms", "0");
            embedded.afterPropertiesSet();
            brokers = embedded.getBrokersAsString();
        }
        List<Variant> variants = new ArrayList<>();
        try {
            for (String name : names) {
                if (name.equals("raw-client")) {
                    variants.add(new RawClients(brokers, "bench.raw-client", 3));
                    out.printf("variant %-10s bare KafkaProducer/KafkaConsumer (assign), linger.ms=0, acks=all%n", name);
                    continue;
                }
                Map<String, String> properties = new LinkedHashMap<>();
                if (name.equals("previous")) {
                    properties.putAll(PREVIOUS);
                }
                properties.putAll(sets.getOrDefault(name, Map.of()));
                variants.add(start(name, brokers, properties));
                out.printf("variant %-10s %s%n", name, properties.isEmpty() ? "(shipped settings)" : properties);
            }
            // The first cancel of each variant: the producer binding is created lazily unless warmed.
            for (Variant variant : variants) {
                long[] first = variant.once(timeoutMillis);
                out.printf("first cancel after startup, %-10s publish->observed %7.2f ms, publish->ack %7.2f ms%n",
                        variant.name(), first[0] / 1e6, first[1] / 1e6);
            }
            int lost = 0;
            for (int round = 0; round < warmup + n; round++) {
                List<Variant> order = new ArrayList<>(variants);
                Collections.shuffle(order, ThreadLocalRandom.current());
                for (Variant variant : order) {
                    long[] sample = variant.once(timeoutMillis);
                    if (sample == null) {
                        lost++;
                    } else if (round >= warmup) {
                        variant.observed().add(sample[0]);
                        variant.acked().add(sample[1]);
                    }
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(intervalMillis));
            }
            out.printf("%n%d cancels per variant after %d warm-up ones, interleaved, %d ms between rounds; lost: %d%n",
                    n, warmup, intervalMillis, lost);
            out.printf("%-10s %-20s %8s %8s %8s %8s %8s%n", "variant", "leg (ms)", "p50", "p90", "p99", "p99.9",
                    "max");
            for (Variant variant : variants) {
                print(out, variant.name(), "publish->observed", variant.observed());
                print(out, variant.name(), "publish->ack", variant.acked());
            }
        } finally {
            for (Variant variant : variants) {
                variant.close();
            }
            if (embedded != null) {
                embedded.destroy();
            }
        }
        System.exit(0);
    }

    private static Variant start(String name, String brokers, Map<String, String> properties) {
        String topic = "bench." + name;
        List<String> common = new ArrayList<>(List.of(
                "--spring.kafka.bootstrap-servers=" + brokers,
                "--ripcord.cancel.topic=" + topic,
                "--ripcord.cancel.dlt-topic=" + topic + ".dlt",
                "--spring.main.banner-mode=off",
                "--management.tracing.sampling.probability=0"));
        properties.forEach((k, v) -> common.add("--" + k + "=" + v));
        ConfigurableApplicationContext gateway = context(common, "gateway", name + "-gw", false);
        ConfigurableApplicationContext worker = context(common, "prefill", name + "-worker", true);
        return new ServicePair(name, gateway, worker, new ArrayList<>(), new ArrayList<>());
    }

    private static ConfigurableApplicationContext context(List<String> common, String service, String instance,
                                                          boolean consume) {
        List<String> args = new ArrayList<>(common);
        args.add("--spring.application.name=" + service);
        args.add("--ripcord.cancel.instance-id=" + instance);
        args.add("--ripcord.cancel.consume=" + consume);
        return new SpringApplicationBuilder(Service.class).web(WebApplicationType.NONE)
                .run(args.toArray(String[]::new));
    }

    private static void print(PrintStream out, String variant, String leg, List<Long> nanos) {
        if (nanos.isEmpty()) {
            out.printf("%-10s %-20s (no samples)%n", variant, leg);
            return;
        }
        long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
        out.printf("%-10s %-20s %8.2f %8.2f %8.2f %8.2f %8.2f%n", variant, leg, percentile(sorted, 50) / 1e6,
                percentile(sorted, 90) / 1e6, percentile(sorted, 99) / 1e6, percentile(sorted, 99.9) / 1e6,
                sorted[sorted.length - 1] / 1e6);
    }

    /** Nearest rank. */
    static long percentile(long[] sorted, double p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
