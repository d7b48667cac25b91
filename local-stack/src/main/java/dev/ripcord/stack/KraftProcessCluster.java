package dev.ripcord.stack;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.Uuid;

/**
 * A KRaft cluster whose nodes are processes of their own ({@link KraftNode}, one JVM each), so that a node can crash
 * as a broker crashes: {@link #kill} sends it SIGKILL, and the node loses what a {@code kill -9} loses (its sockets
 * without a goodbye, its leaderships without a controlled shutdown; the controllers notice when its heartbeats stop,
 * {@value KraftBroker#SESSION_TIMEOUT_MS} ms). Each node is configured as {@link KraftBroker}'s nodes are, listeners
 * and replication included; the in-JVM {@link KraftBroker} stays what {@code ./ripcord up} and most tests use.
 *
 * <p>A node runs on the class path of the JVM that starts it (a test's or a bench's: local-stack's classes and
 * Kafka's), with a small heap ({@value #HEAP}), the serial collector and the client compiler, its output written to
 * {@code kafka-<id>.log} in the log directory (a restarted node appends to it). Its data directory is a fresh
 * temporary one, kept across {@link #kill} and {@link #restart}, deleted by {@link #close()}.
 *
 * <p>Lifecycle: {@link #start} starts every node and returns once each has started; {@link #close()} kills every
 * node, waits for each to be gone and deletes the directories; idempotent, and also run by a shutdown hook, so that
 * no node outlives the JVM that started it (a node also halts by itself when that JVM dies: {@link KraftNode}).
 */
public final class KraftProcessCluster implements AutoCloseable {

    /** Each node's heap ceiling. */
    static final String HEAP = "384m";
    private static final Duration START_LIMIT = Duration.ofMinutes(3);

    private final List<NodeProcess> nodes;
    private final Thread shutdownHook;
    private boolean closed;

    private static final class NodeProcess {
        final int id;
        final KraftBroker.NodePorts ports;
        final Path dir;
        final List<String> command;
        final Path logFile;
        Process process;
        Thread relay;

        NodeProcess(int id, KraftBroker.NodePorts ports, Path dir, List<String> command, Path logFile) {
            this.id = id;
            this.ports = ports;
            this.dir = dir;
            this.command = command;
            this.logFile = logFile;
        }
    }

    private KraftProcessCluster(List<NodeProcess> nodes) {
        this.nodes = nodes;
        this.shutdownHook = new Thread(this::killAll, "kraft-cluster-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** Starts one node process per element of {@code ports} (0s there are free ports), logging into {@code logDir}. */
    public static KraftProcessCluster start(List<KraftBroker.NodePorts> ports, Path logDir) {
        int n = ports.size();
        List<KraftBroker.NodePorts> resolved = KraftBroker.resolvePorts(ports);
        String voters = IntStream.range(0, n).mapToObj(i -> (i + 1) + "@localhost:" + resolved.get(i).controller())
                .collect(Collectors.joining(","));
        String clusterId = Uuid.randomUuid().toString();
        List<NodeProcess> nodes = new ArrayList<>();
        try {
            Files.createDirectories(logDir);
            for (int i = 0; i < n; i++) {
                int id = i + 1;
                KraftBroker.NodePorts p = resolved.get(i);
                Path dir = Files.createTempDirectory("ripcord-kafka-" + id + "-");
                nodes.add(new NodeProcess(id, p, dir, command(id, n, p, voters, clusterId, dir),
                        logDir.resolve("kafka-" + id + ".log")));
            }
            KraftProcessCluster cluster = new KraftProcessCluster(nodes);
            try {
                // Each node's startup waits for the controller quorum, a majority of the nodes: all at once.
                cluster.startAll(nodes, false);
            } catch (RuntimeException e) {
                cluster.close();
                throw e;
            }
            return cluster;
        } catch (IOException e) {
            nodes.forEach(node -> KraftBroker.deleteRecursively(node.dir));
            throw new UncheckedIOException("cannot prepare the Kafka nodes' directories", e);
        }
    }

    private static List<String> command(int id, int n, KraftBroker.NodePorts p, String voters, String clusterId,
                                        Path dir) {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+UseSerialGC", "-Xms32m", "-Xmx" + HEAP, "-XX:+UseCompactObjectHeaders",
                "-XX:TieredStopAtLevel=1", "-XX:CompileThresholdScaling=0.1",
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-cp", System.getProperty("java.class.path"), KraftNode.class.getName(),
                "--id=" + id, "--nodes=" + n, "--client=" + p.client(), "--controller=" + p.controller(),
                "--voters=" + voters, "--cluster-id=" + clusterId, "--dir=" + dir,
                "--parent=" + ProcessHandle.current().pid()));
        if (p.services() != 0) {
            command.add("--services=" + p.services());
            command.add("--services-advertised=" + p.servicesAdvertised());
        }
        return List.copyOf(command);
    }

    private void startAll(List<NodeProcess> toStart, boolean append) {
        List<CompletableFuture<Void>> started = new ArrayList<>();
        for (NodeProcess node : toStart) {
            started.add(launch(node, append));
        }
        try {
            CompletableFuture.allOf(started.toArray(CompletableFuture[]::new))
                    .get(START_LIMIT.toSeconds(), TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("Kafka node(s) " + toStart.stream().map(x -> String.valueOf(x.id)).toList()
                    + " did not start within " + START_LIMIT + "; see " + toStart.getFirst().logFile.getParent());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting Kafka nodes", e);
        }
    }

    /** Starts {@code node}'s process; the future completes when it prints {@link KraftNode#STARTED}. */
    private static CompletableFuture<Void> launch(NodeProcess node, boolean append) {
        CompletableFuture<Void> started = new CompletableFuture<>();
        try {
            ProcessBuilder builder = new ProcessBuilder(node.command).redirectErrorStream(true);
            builder.environment().putAll(HostBudget.ENVIRONMENT);
            Process process = builder.start();
            Writer log = Files.newBufferedWriter(node.logFile, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING);
            node.process = process;
            node.relay = Thread.ofPlatform().daemon().name("relay-kafka-" + node.id).start(() -> {
                try (BufferedReader in = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)); log) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (line.equals(KraftNode.STARTED)) {
                            started.complete(null);
                        }
                        log.write(line);
                        log.write('\n');
                        log.flush();
                    }
                } catch (IOException e) {
                    // The node's output closes when it exits; nothing more to copy.
                }
                started.completeExceptionally(new IllegalStateException("Kafka node " + node.id + " (pid "
                        + process.pid() + ") exited before it started; see " + node.logFile));
            });
        } catch (IOException e) {
            started.completeExceptionally(new UncheckedIOException("cannot start Kafka node " + node.id, e));
        }
        return started;
    }

    /** The {@code host:port,...} of every node's plain listener: the harness's way in. */
    public String bootstrapServers() {
        return nodes.stream().map(n -> "localhost:" + n.ports.client()).collect(Collectors.joining(","));
    }

    /** The {@code SERVICES} listeners as advertised (the proxies' addresses), or the plain ones without them. */
    public String servicesBootstrapServers() {
        return nodes.stream().map(n -> "localhost:" + n.ports.servicesPort()).collect(Collectors.joining(","));
    }

    public int nodes() {
        return nodes.size();
    }

    /** The pid of node {@code id} (from 1): of its latest process. */
    public synchronized long pid(int id) {
        return node(id).process.pid();
    }

    /** Whether node {@code id}'s process is alive. */
    public synchronized boolean isRunning(int id) {
        Process p = node(id).process;
        return p != null && p.isAlive();
    }

    /**
     * SIGKILL to node {@code id} (from 1); returns once the process is gone (its exit reaped), or throws if it is not
     * within 30 s. Its data stays for {@link #restart}.
     */
    public synchronized void kill(int id) {
        requireOpen();
        NodeProcess node = node(id);
        if (!node.process.isAlive()) {
            throw new IllegalStateException("Kafka node " + id + " is not running");
        }
        node.process.destroyForcibly(); // SIGKILL on Unix
        try {
            if (!node.process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("Kafka node " + id + " (pid " + node.process.pid()
                        + ") still alive 30 s after SIGKILL");
            }
            node.relay.join(Duration.ofSeconds(5)); // its last lines, before a restart appends to the same log
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing Kafka node " + id, e);
        }
    }

    /** Starts node {@code id} (from 1) again after {@link #kill}, on its ports and data; returns once it started. */
    public synchronized void restart(int id) {
        requireOpen();
        NodeProcess node = node(id);
        if (node.process.isAlive()) {
            throw new IllegalStateException("Kafka node " + id + " (pid " + node.process.pid() + ") is running");
        }
        startAll(List.of(node), true);
    }

    /** The node that leads {@code topic}'s partition {@code partition} now (asked of a running node); -1 if none. */
    public int leader(String topic, int partition) {
        Node leader = describe(topic).partitions().get(partition).leader();
        return leader == null ? -1 : leader.id();
    }

    /** The in-sync replicas of {@code topic}'s partition {@code partition}, by node id. */
    public List<Integer> inSyncReplicas(String topic, int partition) {
        return describe(topic).partitions().get(partition).isr().stream().map(Node::id).sorted().toList();
    }

    private TopicDescription describe(String topic) {
        String running;
        synchronized (this) {
            running = nodes.stream().filter(n -> n.process != null && n.process.isAlive())
                    .map(n -> "localhost:" + n.ports.client()).collect(Collectors.joining(","));
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                running.isEmpty() ? bootstrapServers() : running,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Duration.ofSeconds(30).toMillis()))) {
            return admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        } catch (Exception e) {
            throw new IllegalStateException("cannot describe " + topic + ": " + e.getMessage(), e);
        }
    }

    private NodeProcess node(int id) {
        if (id < 1 || id > nodes.size()) {
            throw new IllegalArgumentException("no Kafka node " + id + " (nodes 1.." + nodes.size() + ")");
        }
        return nodes.get(id - 1);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the cluster is closed");
        }
    }

    /** SIGKILL to every node still running, and waits for each to be gone. */
    private void killAll() {
        List<Process> running = new ArrayList<>();
        synchronized (this) {
            for (NodeProcess node : nodes) {
                if (node.process != null && node.process.isAlive()) {
                    running.add(node.process);
                }
            }
        }
        running.forEach(Process::destroyForcibly);
        for (Process p : running) {
            try {
                p.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Kills every node (their data is thrown away: no graceful shutdown to wait for) and deletes their data. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        killAll();
        for (NodeProcess node : nodes) {
            if (node.relay != null) {
                try {
                    node.relay.join(Duration.ofSeconds(5));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            KraftBroker.deleteRecursively(node.dir);
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs (or ran) anyway
        }
    }
}
