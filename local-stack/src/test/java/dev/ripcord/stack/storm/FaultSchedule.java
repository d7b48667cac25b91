package dev.ripcord.stack.storm;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.FaultProxy;
import dev.ripcord.stack.Role;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A seeded schedule of faults against a {@link FaultStack}, injected one after another while a storm runs: which
 * faults, in which order, against which broker, worker or link, all drawn from the seed. Each fault is injected,
 * held, healed, and its recovery measured (from the moment it was healed, or its process started again, until
 * the stack serves a request again), before the next one starts.
 *
 * <p>While a broker or a worker is down, and while the services are cut off from Kafka, the schedule publishes
 * cancels for requests that do not exist yet (as an operator would, straight to the cluster, {@code acks=all}),
 * each named by an internal ID as a gateway mints them: {@link #probeIds()}. After the last fault each of those
 * requests is submitted to every decode worker under that ID, as a gateway sends its decode leg; each worker must
 * answer it as cancelled, or the cancel was lost.
 */
final class FaultSchedule {

    /** The faults a schedule can inject, by their name in {@code --faults} and in the summary. */
    enum Fault {
        BROKER_KILL("broker_kill"),
        WORKER_PAUSE("worker_pause"),
        WORKER_KILL("worker_kill"),
        GATEWAY_RESTART("gateway_restart"),
        NET_DELAY("net_delay"),
        NET_RESET("net_reset"),
        NET_PARTITION("net_partition"),
        KV_NET("kv_net");

        final String id;

        Fault(String id) {
            this.id = id;
        }

        static Fault of(String id) {
            for (Fault f : values()) {
                if (f.id.equals(id)) {
                    return f;
                }
            }
            throw new IllegalArgumentException("unknown fault '" + id + "' (known: " + ids(EnumSet.allOf(Fault.class))
                    + ")");
        }

        static String ids(Set<Fault> faults) {
            return String.join(",", faults.stream().map(f -> f.id).toList());
        }
    }

    /**
     * How long a partition lasts (past the services' Kafka request timeout,
     * {@link FaultStack#KAFKA_REQUEST_TIMEOUT}, so that their clients give up on the cut connections), a paused
     * worker stays stopped, a killed broker stays down.
     */
    static final Duration PARTITION = Duration.ofSeconds(13);
    static final Duration PAUSE = Duration.ofSeconds(3);
    static final Duration BROKER_DOWN = Duration.ofSeconds(5);
    static final Duration DELAY = Duration.ofMillis(50);
    static final Duration DELAY_HELD = Duration.ofSeconds(5);
    /** Cancels published for future requests during each outage. */
    static final int PROBES_PER_OUTAGE = 2;
    private static final Duration RECOVERY_LIMIT = Duration.ofMinutes(5);

    /**
     * What one injected fault did.
     *
     * @param fault           which
     * @param target          the broker, worker, gateway or links it hit ({@code decode-2}, {@code kafka-3}, ...)
     * @param detail          what was done
     * @param recoverySeconds from the heal (or the restart) until the stack served a request again
     * @param underLoad       whether the storm still sent requests when it was injected
     * @param from            when it was injected
     * @param to              when the stack served a request again after it
     * @param evidence        what shows that it took effect (leadership moved, the process gone or stopped, bytes
     *                        held, connections reset), measured, not assumed; null when nothing showed it, which fails
     *                        the run
     */
    record Injected(Fault fault, String target, String detail, double recoverySeconds, boolean underLoad,
                    Instant from, Instant to, String evidence) {
    }

    private final FaultStack stack;
    private final List<Fault> order;
    private final Random random;
    private final PrintStream log;
    private final List<Injected> injected = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, String> skipped = Collections.synchronizedMap(new LinkedHashMap<>());
    private final List<String> probeIds = Collections.synchronizedList(new ArrayList<>());
    private final Probe probe;
    private volatile BooleanSupplier underLoad = () -> false;

    /** Serves one short request through a gateway; true if it completed. */
    @FunctionalInterface
    interface Probe {
        boolean serves();
    }

    FaultSchedule(FaultStack stack, Set<Fault> faults, long seed, Probe probe, PrintStream log) {
        this.stack = stack;
        this.random = new Random(seed);
        this.probe = probe;
        this.log = log;
        List<Fault> chosen = new ArrayList<>(faults);
        Collections.shuffle(chosen, random);
        this.order = List.copyOf(chosen);
    }

    List<Fault> order() {
        return order;
    }

    List<Injected> injected() {
        return List.copyOf(injected);
    }

    Map<String, String> skipped() {
        return Map.copyOf(skipped);
    }

    List<String> probeIds() {
        return List.copyOf(probeIds);
    }

    /** Runs every fault in order; {@code load} says whether the storm still sends requests. */
    void run(BooleanSupplier load) throws InterruptedException {
        this.underLoad = load;
        try (KafkaProducer<String, String> operator = operator(stack.directBootstrap())) {
            for (Fault fault : order) {
                Thread.sleep(Duration.ofMillis(1000 + random.nextInt(2000)));
                log.printf("fault %s at %s ...%n", fault.id, Instant.now());
                try {
                    Injected done = inject(fault, operator);
                    if (done != null) {
                        injected.add(done);
                        log.printf("fault %s on %s: %s; serving again %.1f s after it was healed%s%n", fault.id,
                                done.target(), done.detail(), done.recoverySeconds(),
                                done.underLoad() ? "" : " (the storm had ended)");
                    }
                } catch (RuntimeException e) {
                    skipped.put(fault.id, "injection failed: " + e);
                    log.printf("fault %s could not be injected: %s%n", fault.id, e);
                }
            }
        } finally {
            stack.allProxies().forEach(p -> {
                p.heal();
                p.latency(Duration.ZERO);
            });
        }
    }

    private Injected inject(Fault fault, KafkaProducer<String, String> operator) throws InterruptedException {
        boolean load = underLoad.getAsBoolean();
        Instant from = Instant.now();
        return switch (fault) {
            case BROKER_KILL -> {
                int partition = random.nextInt(3);
                int leader = stack.cluster().leader("ripcord.cancellations", partition);
                long pid = stack.cluster().pid(leader);
                stack.cluster().kill(leader); // SIGKILL, returns once the process is reaped
                boolean gone = ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true);
                int moved = awaitNewLeader(partition, leader);
                publishProbes("broker", operator);
                Thread.sleep(BROKER_DOWN);
                long healed = System.nanoTime();
                stack.cluster().restart(leader);
                awaitInSync();
                double recovery = recovered(healed);
                yield new Injected(fault, "kafka-" + leader, "SIGKILL to the leader of ripcord.cancellations-"
                        + partition + " (pid " + pid + "), down " + BROKER_DOWN.toSeconds()
                        + " s, restarted on its data as pid " + stack.cluster().pid(leader)
                        + "; every partition back to 3 in-sync replicas", recovery, load, from, Instant.now(),
                        gone && moved >= 0 ? "pid " + pid + " gone after SIGKILL; leadership of ripcord.cancellations-"
                                + partition + " moved from kafka-" + leader + " to kafka-" + moved : null);
            }
            case WORKER_PAUSE -> {
                int index = random.nextInt(stack.stack().instances().prefills());
                long pid = stack.pid(Role.PREFILL, index);
                signal("STOP", pid);
                String state = awaitStopped(pid);
                Thread.sleep(PAUSE);
                long healed = System.nanoTime();
                signal("CONT", pid);
                double recovery = recovered(healed);
                yield new Injected(fault, "prefill-" + (index + 1), "SIGSTOP for " + PAUSE.toSeconds()
                        + " s, then SIGCONT", recovery, load, from, Instant.now(),
                        "T".equals(state) ? "pid " + pid + " in state T (stopped) while paused" : null);
            }
            case WORKER_KILL -> {
                int index = random.nextInt(stack.stack().instances().decodes());
                boolean midTransfer = awaitTransfer(index);
                long pid = stack.pid(Role.DECODE, index);
                stack.local().kill(Role.DECODE, index);
                boolean gone = ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true);
                publishProbes("decode", operator);
                long healed = System.nanoTime();
                stack.local().restart(Role.DECODE, index);
                double recovery = recovered(healed);
                yield new Injected(fault, "decode-" + (index + 1), "SIGKILL "
                        + (midTransfer ? "with a KV transfer session open" : "(no transfer session seen open)")
                        + ", restarted", recovery, load, from, Instant.now(),
                        gone ? "pid " + pid + " gone after SIGKILL, restarted as pid " + stack.pid(Role.DECODE, index)
                                : null);
            }
            case GATEWAY_RESTART -> {
                int index = random.nextInt(stack.stack().instances().gateways());
                long pid = stack.pid(Role.GATEWAY, index);
                boolean graceful = stack.local().terminate(Role.GATEWAY, index);
                boolean gone = ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true);
                long healed = System.nanoTime();
                stack.local().restart(Role.GATEWAY, index);
                double recovery = recovered(healed);
                long again = stack.pid(Role.GATEWAY, index);
                yield new Injected(fault, "gateway-" + (index + 1), "SIGTERM ("
                        + (graceful ? "drained, exited" : "killed after the grace period") + "), started again",
                        recovery, load, from, Instant.now(), gone && again != pid ? "pid " + pid
                                + " exited, restarted as pid " + again : null);
            }
            case NET_DELAY -> {
                long before = forwarded(stack.allProxies());
                for (FaultProxy p : stack.allProxies()) {
                    p.latency(DELAY);
                }
                Thread.sleep(DELAY_HELD);
                long delayed = forwarded(stack.allProxies()) - before;
                long healed = System.nanoTime();
                for (FaultProxy p : stack.allProxies()) {
                    p.latency(Duration.ZERO);
                }
                double recovery = recovered(healed);
                yield new Injected(fault, "gateway<->workers, services<->kafka", "+" + DELAY.toMillis()
                        + " ms per chunk each way for " + DELAY_HELD.toSeconds() + " s", recovery, load, from,
                        Instant.now(), delayed > 0 ? delayed + " bytes forwarded with the delay" : null);
            }
            case NET_RESET -> {
                int reset = 0;
                for (FaultProxy p : stack.allProxies()) {
                    reset += p.reset();
                }
                long healed = System.nanoTime();
                double recovery = recovered(healed);
                yield new Injected(fault, "gateway<->workers, services<->kafka", reset
                        + " open connections reset", recovery, load, from, Instant.now(),
                        reset > 0 ? reset + " connections reset" : null);
            }
            case NET_PARTITION -> {
                List<FaultProxy> kafka = stack.kafkaProxies();
                List<FaultProxy> workers = new ArrayList<>(stack.workerProxies().values());
                FaultProxy worker = workers.get(random.nextInt(workers.size()));
                List<FaultProxy> cut = new ArrayList<>(kafka);
                cut.add(worker);
                Cut before = Cut.of(kafka, worker);
                cut.forEach(FaultProxy::drop);
                publishProbes("partition", operator);
                Thread.sleep(PARTITION);
                Cut during = Cut.of(kafka, worker).minus(before);
                long healed = System.nanoTime();
                cut.forEach(FaultProxy::heal);
                long cutOnHeal = Cut.of(kafka, worker).minus(before).cutOnHeal();
                double recovery = recovered(healed);
                yield new Injected(fault, "services<->kafka and " + worker.name(), PARTITION.toSeconds()
                        + " s partition that drops (new connections refused, bytes dropped both ways, the "
                        + "connections that lost bytes reset when it healed: " + cutOnHeal + ")", recovery, load, from,
                        Instant.now(), during.evidence());
            }
            case KV_NET -> {
                skipped.put(fault.id, "prefill copies KV into decode's pages through shared memory "
                        + "(ripcord.kv.backend=shm, all workers on one host): no socket between them to fault; with "
                        + "tcp, a transfer descriptor carries the receiving agent's own port, so no proxy can be put "
                        + "in between");
                yield null;
            }
        };
    }

    /**
     * What the proxies of a dropping partition counted, on the services-to-Kafka links and on the cut gateway-to-worker
     * link: bytes dropped, connections refused, connections a client closed while cut (it gave up on them at one of
     * its timeouts: for Kafka's clients, {@code request.timeout.ms}), and connections reset when it healed.
     */
    record Cut(long kafkaDropped, long kafkaRefused, long kafkaGaveUp, long workerDropped, long workerRefused,
               long workerGaveUp, long cutOnHeal) {

        static Cut of(List<FaultProxy> kafka, FaultProxy worker) {
            return new Cut(kafka.stream().mapToLong(FaultProxy::bytesDropped).sum(),
                    kafka.stream().mapToLong(FaultProxy::connectionsRefused).sum(),
                    kafka.stream().mapToLong(FaultProxy::clientsGaveUp).sum(), worker.bytesDropped(),
                    worker.connectionsRefused(), worker.clientsGaveUp(),
                    kafka.stream().mapToLong(FaultProxy::connectionsCutOnHeal).sum() + worker.connectionsCutOnHeal());
        }

        Cut minus(Cut o) {
            return new Cut(kafkaDropped - o.kafkaDropped, kafkaRefused - o.kafkaRefused, kafkaGaveUp - o.kafkaGaveUp,
                    workerDropped - o.workerDropped, workerRefused - o.workerRefused, workerGaveUp - o.workerGaveUp,
                    cutOnHeal - o.cutOnHeal);
        }

        /**
         * The evidence that the partition dropped and outlasted a client's timeout, or null: bytes dropped on the
         * Kafka links and a Kafka client that gave up on a cut connection, and the worker link cut (bytes dropped or
         * connections refused).
         */
        String evidence() {
            boolean kafkaCut = kafkaDropped > 0 && kafkaGaveUp > 0;
            boolean workerCut = workerDropped > 0 || workerRefused > 0;
            return kafkaCut && workerCut ? "services<->kafka: " + kafkaDropped + " bytes dropped, " + kafkaRefused
                    + " connections refused, " + kafkaGaveUp + " connections the clients gave up on (their request "
                    + "timeout); gateway->worker: " + workerDropped + " bytes dropped, " + workerRefused
                    + " connections refused, " + workerGaveUp + " given up" : null;
        }
    }

    /** The new leader of the cancellations topic's {@code partition} once {@code killed} is down, or -1 (30 s). */
    private int awaitNewLeader(int partition, int killed) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            try {
                int leader = stack.cluster().leader("ripcord.cancellations", partition);
                if (leader >= 0 && leader != killed) {
                    return leader;
                }
            } catch (IllegalStateException e) {
                // the metadata was not answered yet: ask again
            }
            Thread.sleep(100);
        }
        return -1;
    }

    private static long forwarded(List<FaultProxy> proxies) {
        return proxies.stream().mapToLong(FaultProxy::bytesForwarded).sum();
    }

    /** The state letter of {@code pid} once it reads {@code T} (stopped), or the last one read within 2 s. */
    private static String awaitStopped(long pid) throws InterruptedException {
        String state = processState(pid);
        long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (!"T".equals(state) && System.nanoTime() < deadline) {
            Thread.sleep(10); // the signal is delivered asynchronously: the process stops a moment later
            state = processState(pid);
        }
        return state;
    }

    /** The state letter of process {@code pid} ({@code /proc/<pid>/stat}), or null. */
    private static String processState(long pid) {
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
            return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Seconds from {@code healedNanos} until a short request through a gateway completes. */
    private double recovered(long healedNanos) throws InterruptedException {
        long deadline = System.nanoTime() + RECOVERY_LIMIT.toNanos();
        while (System.nanoTime() < deadline) {
            if (probe.serves()) {
                return (System.nanoTime() - healedNanos) / 1e9;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the stack did not serve a request within " + RECOVERY_LIMIT
                + " after the fault was healed");
    }

    private void awaitInSync() throws InterruptedException {
        long deadline = System.nanoTime() + RECOVERY_LIMIT.toNanos();
        while (System.nanoTime() < deadline) {
            boolean all = true;
            for (int p = 0; p < 3; p++) {
                all &= stack.cluster().inSyncReplicas("ripcord.cancellations", p).size() == FaultStack.BROKERS;
            }
            if (all) {
                return;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("ripcord.cancellations not back to " + FaultStack.BROKERS
                + " in-sync replicas within " + RECOVERY_LIMIT);
    }

    /** Waits (up to 10 s) until decode {@code index} has a transfer session open; whether it saw one. */
    private boolean awaitTransfer(int index) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            try {
                WorkerStatus s = stack.stack().workers(0, index).status(Role.DECODE);
                if (s.liveSessions() > 0) {
                    return true;
                }
            } catch (RuntimeException e) {
                // not answering: kill it anyway
                return false;
            }
            Thread.sleep(5);
        }
        return false;
    }

    private void publishProbes(String during, KafkaProducer<String, String> operator) {
        for (int i = 0; i < PROBES_PER_OUTAGE; i++) {
            // Named as workers know requests: by the internal ID a gateway mints at admission (the probe is then
            // submitted to the workers under it, as a gateway sends its legs).
            String id = RequestIds.internalId("probe-" + during + "-" + Long.toHexString(random.nextLong()));
            try {
                operator.send(new ProducerRecord<>("ripcord.cancellations", id, cancelEvent(id)))
                        .get(60, TimeUnit.SECONDS);
                probeIds.add(id);
            } catch (Exception e) {
                throw new IllegalStateException("an operator's cancel was not acknowledged (acks=all) during the "
                        + during + " outage: " + e, e);
            }
        }
    }

    private static void signal(String signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run kill -" + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    static KafkaProducer<String, String> operator(String bootstrap) {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "ripcord-faults-operator");
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }

    /** The cancellations topic's wire format, as an operator's tool writes it. */
    static String cancelEvent(String requestId) {
        return "{\"schemaVersion\":1,\"requestId\":\"" + requestId + "\",\"reason\":\"CLIENT_CANCEL\","
                + "\"origin\":{\"service\":\"operator\",\"instance\":\"faults\"},\"timestamp\":\"" + Instant.now()
                + "\"}";
    }
}
