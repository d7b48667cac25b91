package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A real Kafka cluster running in this JVM in KRaft mode: one node by default, or {@code n} nodes, each a combined
 * broker and controller, the controllers an {@code n}-voter quorum.
 *
 * <p>Design note: this uses Kafka's own server classes, not a mock or a test double, so that the local stack
 * exercises exactly the protocol the services meet in production. The storage is formatted in a fresh temporary
 * directory on every start and deleted by {@link #close()}; nothing survives a new start, which is what a
 * developer's laptop stack wants (the cancellation topic's replay window is meaningful only within one run).
 * {@link #restart()} keeps the directory: a broker restart loses nothing it acknowledged.
 *
 * <p>A cluster of three is what a production cluster looks like to the services: the cluster's own topics and the
 * topics created with the broker's defaults are replicated three times with {@code min.insync.replicas} 2, so that
 * one node can die with no acknowledged record lost and writes with {@code acks=all} still accepted. {@link #kill}
 * stops one node as a crash would, as far as a node in a shared JVM can crash: its sockets close at once, without
 * the controlled shutdown that would move its partitions' leadership first (the cluster learns of the death when
 * the node's heartbeats stop, {@value #SESSION_TIMEOUT_MS} ms), and its data stays for {@link #restart(int)}.
 * What it cannot do is lose the node's unflushed writes: the page cache outlives an in-process stop as it outlives
 * a {@code kill -9}.
 *
 * <p>A node may also have a second client listener, {@code SERVICES}, whose advertised port is another process's
 * (a fault-injecting proxy in front of it: {@link FaultProxy}); clients that bootstrap there are told those
 * addresses, clients that bootstrap on the plain listener are told the plain ones, and the nodes replicate over
 * the plain one.
 *
 * <p>Lifecycle: {@link #start} formats and starts; {@link #close()} shuts down, waits for shutdown and deletes
 * the directories. {@code close()} is idempotent.
 */
public final class KraftBroker implements AutoCloseable {

    /** How long the controllers wait for a silent node before they fence it and move its leaderships. */
    static final int SESSION_TIMEOUT_MS = 3000;

    /**
     * The ports of one node.
     *
     * @param client          the plain client listener ({@code PLAINTEXT}), also how the nodes replicate
     * @param controller      the controller listener
     * @param services        the {@code SERVICES} listener's own port, or 0 for none
     * @param servicesAdvertised the port advertised for {@code SERVICES} (a proxy's), or 0 for none
     */
    public record NodePorts(int client, int controller, int services, int servicesAdvertised) {

        /** A node with only the plain listener, on {@code client} (0: a free port) and a free controller port. */
        public static NodePorts plain(int client) {
            return new NodePorts(client, 0, 0, 0);
        }

        /**
         * The port the services reach this node on: the {@code SERVICES} listener as advertised (a proxy's port when
         * one stands in front of it), else the listener itself, else the plain listener when there is no
         * {@code SERVICES} listener.
         */
        public int servicesPort() {
            return services == 0 ? client : servicesAdvertised != 0 ? servicesAdvertised : services;
        }
    }

    private final List<NodeState> nodes;
    private boolean closed;

    private static final class NodeState {
        final int id;
        final NodePorts ports;
        final Path dir;
        final Properties config;
        KafkaRaftServer server;

        NodeState(int id, NodePorts ports, Path dir, Properties config) {
            this.id = id;
            this.ports = ports;
            this.dir = dir;
            this.config = config;
        }
    }

    private KraftBroker(List<NodeState> nodes) {
        this.nodes = nodes;
    }

    /**
     * Formats storage in a new temporary directory and starts one broker.
     *
     * @param port the client (PLAINTEXT) port on localhost; 0 picks a free one
     */
    public static KraftBroker start(int port) {
        return start(List.of(NodePorts.plain(port)));
    }

    /**
     * Starts a cluster of {@code nodes} nodes; node {@code i} (from 0) listens on {@code firstPort + i}, or on free
     * ports if {@code firstPort} is 0.
     */
    public static KraftBroker start(int firstPort, int nodes) {
        if (nodes < 1) {
            throw new IllegalArgumentException("a Kafka cluster has at least one node, got " + nodes);
        }
        List<NodePorts> ports = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            ports.add(NodePorts.plain(firstPort == 0 ? 0 : firstPort + i));
        }
        return start(ports);
    }

    /** Starts one node per element of {@code ports} (0s there are free ports chosen here). */
    public static KraftBroker start(List<NodePorts> ports) {
        int n = ports.size();
        List<NodePorts> resolved = resolvePorts(ports);
        String voters = java.util.stream.IntStream.range(0, n)
                .mapToObj(i -> (i + 1) + "@localhost:" + resolved.get(i).controller())
                .collect(Collectors.joining(","));
        String clusterId = Uuid.randomUuid().toString();
        List<NodeState> states = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                Path dir;
                try {
                    dir = Files.createTempDirectory("ripcord-kafka-");
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot create a temporary directory for Kafka's log", e);
                }
                NodeState node = new NodeState(i + 1, resolved.get(i), dir, config(i + 1, n, resolved.get(i),
                        voters, dir));
                states.add(node);
                format(node.id, clusterId, dir);
            }
            // Each node's startup waits for the controller quorum, which needs a majority of the nodes: all at once.
            List<CompletableFuture<Void>> starts = new ArrayList<>();
            for (NodeState node : states) {
                starts.add(CompletableFuture.runAsync(() -> startNode(node),
                        r -> Thread.ofPlatform().daemon().name("kafka-start-" + node.id).start(r)));
            }
            CompletableFuture.allOf(starts.toArray(CompletableFuture[]::new)).join();
            return new KraftBroker(states);
        } catch (Exception e) {
            for (NodeState node : states) {
                stopNode(node);
                deleteRecursively(node.dir);
            }
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            throw new IllegalStateException("cannot start the embedded Kafka " + (n == 1 ? "broker" : n + "-node cluster")
                    + " on port " + resolved.stream().map(p -> String.valueOf(p.client())).collect(Collectors.joining(","))
                    + " (is another broker already listening there? use --kafka-port=N or --kafka=host:port): "
                    + cause.getMessage(), cause);
        }
    }

    /** Formats {@code dir} as the log and metadata directory of node {@code id} of cluster {@code clusterId}. */
    static void format(int id, String clusterId, Path dir) throws Exception {
        new Formatter()
                .setPrintStream(new java.io.PrintStream(java.io.OutputStream.nullOutputStream()))
                .setNodeId(id)
                .setClusterId(clusterId)
                .addDirectory(dir.toString())
                .setMetadataLogDirectory(dir.toString())
                .setControllerListenerName("CONTROLLER")
                .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                .run();
    }

    /** {@code n} nodes' ports, with every 0 among the client and controller ports replaced by a free port. */
    static List<NodePorts> resolvePorts(List<NodePorts> ports) {
        // All chosen at once, distinct from each other and from the ports given (FreePorts).
        java.util.Set<Integer> given = new java.util.HashSet<>();
        int wanted = 0;
        for (NodePorts p : ports) {
            given.addAll(List.of(p.client(), p.controller(), p.services(), p.servicesAdvertised()));
            wanted += (p.client() == 0 ? 1 : 0) + (p.controller() == 0 ? 1 : 0);
        }
        java.util.Iterator<Integer> free = FreePorts.choose(wanted, given).iterator();
        List<NodePorts> resolved = new ArrayList<>();
        for (NodePorts p : ports) {
            resolved.add(new NodePorts(p.client() == 0 ? free.next() : p.client(),
                    p.controller() == 0 ? free.next() : p.controller(), p.services(), p.servicesAdvertised()));
        }
        return resolved;
    }

    /**
     * The configuration of node {@code id} of an {@code n}-node cluster whose controller quorum is {@code voters}
     * ({@code id@host:port,...}), its data in {@code dir}: shared with {@link KraftProcessCluster}'s nodes.
     */
    static Properties config(int id, int n, NodePorts ports, String voters, Path dir) {
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", String.valueOf(id));
        props.put("controller.quorum.voters", voters);
        String listeners = "PLAINTEXT://localhost:" + ports.client() + ",CONTROLLER://localhost:" + ports.controller();
        String advertised = "PLAINTEXT://localhost:" + ports.client();
        String protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT";
        if (ports.services() != 0) {
            listeners += ",SERVICES://localhost:" + ports.services();
            advertised += ",SERVICES://localhost:" + ports.servicesPort();
            protocols += ",SERVICES:PLAINTEXT";
        }
        props.put("listeners", listeners);
        props.put("advertised.listeners", advertised);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listener.security.protocol.map", protocols);
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("log.dirs", dir.toString());
        // Replicated as a production cluster replicates: three copies, two of them in sync for a write with
        // acks=all (one copy and one when the cluster is a single node).
        String replicas = String.valueOf(Math.min(n, 3));
        String minIsr = String.valueOf(n >= 3 ? 2 : 1);
        props.put("default.replication.factor", replicas);
        props.put("min.insync.replicas", minIsr);
        props.put("offsets.topic.replication.factor", replicas);
        props.put("offsets.topic.num.partitions", "5");
        props.put("transaction.state.log.replication.factor", replicas);
        props.put("transaction.state.log.min.isr", minIsr);
        props.put("share.coordinator.state.topic.replication.factor", replicas);
        props.put("share.coordinator.state.topic.min.isr", minIsr);
        props.put("group.initial.rebalance.delay.ms", "0");
        props.put("num.partitions", "1");
        // The log cleaner (for the compacted topics: the consumer offsets, and the cancellations topic, keyed by
        // request ID) allocates its dedupe buffer on the heap at start: 128 MB by default, a third of an idle stack's
        // launcher. 2 MB holds about 78,000 keys per pass (24 bytes a slot, loaded to 90 %): a local stack's offsets
        // topic holds a few dozen, and its cancellations topic one per request that was cancelled within the
        // topic's retention (an hour). A dirty section with more keys than that is cleaned in several passes, each
        // up to where the map filled.
        props.put("log.cleaner.dedupe.buffer.size", String.valueOf(2 * 1024 * 1024));
        // Threads sized for a broker that shares a host with the services it serves, not for a dedicated machine
        // (8 request handlers, 3 network threads and 10 background threads by default): a local stack's traffic is
        // a few small records per request, and every idle thread keeps its stack and buffers resident.
        props.put("num.io.threads", "2");
        props.put("num.network.threads", "2");
        props.put("background.threads", "2");
        props.put("num.recovery.threads.per.data.dir", "1");
        if (n > 1) {
            // A node that stops is a node that died (see kill): no controlled shutdown that hands its leaderships
            // over first, and a short session so that the controllers notice within seconds.
            props.put("controlled.shutdown.enable", "false");
            props.put("broker.session.timeout.ms", String.valueOf(SESSION_TIMEOUT_MS));
            props.put("broker.heartbeat.interval.ms", "500");
            props.put("unclean.leader.election.enable", "false");
        }
        return props;
    }

    private static void startNode(NodeState node) {
        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(node.config, false), Time.SYSTEM);
        node.server = server;
        server.startup();
    }

    private static void stopNode(NodeState node) {
        KafkaRaftServer server = node.server;
        node.server = null;
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
        }
    }

    /** The {@code host:port,...} clients use: every node's plain listener. */
    public String bootstrapServers() {
        return nodes.stream().map(n -> "localhost:" + n.ports.client()).collect(Collectors.joining(","));
    }

    /** The {@code SERVICES} listeners as advertised (the proxies' addresses), or the plain ones without them. */
    public String servicesBootstrapServers() {
        return nodes.stream().map(n -> "localhost:" + n.ports.servicesPort()).collect(Collectors.joining(","));
    }

    /** How many nodes the cluster has. */
    public int nodes() {
        return nodes.size();
    }

    /** The ports of node {@code id} (from 1). */
    public NodePorts ports(int id) {
        return node(id).ports;
    }

    /** Whether node {@code id} (from 1) runs. */
    public synchronized boolean isRunning(int id) {
        return node(id).server != null;
    }

    /**
     * Stops every node cleanly and starts them again on the same ports and the same log directories, as an
     * operator's restart would: every record the cluster acknowledged is still there afterwards, and clients
     * reconnect by themselves. For durability tests.
     */
    public synchronized void restart() {
        requireOpen();
        nodes.forEach(KraftBroker::stopNode);
        startAll(nodes);
    }

    /**
     * Stops node {@code id} (from 1) as a crash would (see the class comment) and returns once it is down. Its data
     * stays for {@link #restart(int)}.
     */
    public synchronized void kill(int id) {
        requireOpen();
        NodeState node = node(id);
        if (node.server == null) {
            throw new IllegalStateException("Kafka node " + id + " is not running");
        }
        stopNode(node);
    }

    /** Starts node {@code id} (from 1) again after {@link #kill}, on its ports and its log directory. */
    public synchronized void restart(int id) {
        requireOpen();
        NodeState node = node(id);
        if (node.server != null) {
            stopNode(node);
        }
        startAll(List.of(node));
    }

    private static void startAll(List<NodeState> toStart) {
        List<CompletableFuture<Void>> starts = new ArrayList<>();
        for (NodeState node : toStart) {
            starts.add(CompletableFuture.runAsync(() -> startNode(node),
                    r -> Thread.ofPlatform().daemon().name("kafka-start-" + node.id).start(r)));
        }
        CompletableFuture.allOf(starts.toArray(CompletableFuture[]::new)).join();
    }

    /**
     * The node that leads {@code topic}'s partition {@code partition} now, as the cluster's metadata says (asked of
     * a running node); -1 if the partition has no leader.
     */
    public int leader(String topic, int partition) {
        try (Admin admin = admin()) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic);
            TopicPartitionInfo info = d.partitions().get(partition);
            Node leader = info.leader();
            return leader == null ? -1 : leader.id();
        } catch (Exception e) {
            throw new IllegalStateException("cannot describe " + topic + ": " + e.getMessage(), e);
        }
    }

    /** The in-sync replicas of {@code topic}'s partition {@code partition}, by node id. */
    public List<Integer> inSyncReplicas(String topic, int partition) {
        try (Admin admin = admin()) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic);
            return d.partitions().get(partition).isr().stream().map(Node::id).sorted().toList();
        } catch (Exception e) {
            throw new IllegalStateException("cannot describe " + topic + ": " + e.getMessage(), e);
        }
    }

    private Admin admin() {
        String running;
        synchronized (this) {
            running = nodes.stream().filter(n -> n.server != null).map(n -> "localhost:" + n.ports.client())
                    .collect(Collectors.joining(","));
        }
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, running.isEmpty()
                        ? bootstrapServers() : running,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Duration.ofSeconds(30).toMillis()));
    }

    private NodeState node(int id) {
        if (id < 1 || id > nodes.size()) {
            throw new IllegalArgumentException("no Kafka node " + id + " (nodes 1.." + nodes.size() + ")");
        }
        return nodes.get(id - 1);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the broker is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            // All at once: a node that stops last must not wait for a quorum the others already left.
            List<CompletableFuture<Void>> stops = new ArrayList<>();
            for (NodeState node : nodes) {
                stops.add(CompletableFuture.runAsync(() -> stopNode(node),
                        r -> Thread.ofPlatform().daemon().name("kafka-stop-" + node.id).start(r)));
            }
            CompletableFuture.allOf(stops.toArray(CompletableFuture[]::new)).join();
        } finally {
            nodes.forEach(node -> deleteRecursively(node.dir));
        }
    }

    static int freePort() {
        return FreePorts.one();
    }

    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // Best effort: a leftover temp directory is harmless and the OS cleans it.
        }
    }
}
