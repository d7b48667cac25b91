package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Properties;
import java.util.stream.Stream;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A real single-node Kafka broker running in this JVM in KRaft mode (combined broker and controller).
 *
 * <p>Design note: this uses Kafka's own server classes, not a mock or a test double, so that the local stack
 * exercises exactly the protocol the services meet in production. The storage is formatted in a fresh temporary
 * directory on every start and deleted by {@link #close()}; nothing survives a new start, which is what a
 * developer's laptop stack wants (the cancellation topic's replay window is meaningful only within one run).
 * {@link #restart()} keeps the directory: a broker restart loses nothing it acknowledged.
 *
 * <p>Lifecycle: {@link #start} formats and starts; {@link #close()} shuts down, waits for shutdown and deletes
 * the directory. {@code close()} is idempotent.
 */
public final class KraftBroker implements AutoCloseable {

    private final String bootstrapServers;
    private final Path logDir;
    private final Properties config;
    private KafkaRaftServer server;
    private boolean closed;

    private KraftBroker(String bootstrapServers, Path logDir, Properties config, KafkaRaftServer server) {
        this.bootstrapServers = bootstrapServers;
        this.logDir = logDir;
        this.config = config;
        this.server = server;
    }

    /**
     * Formats storage in a new temporary directory and starts the broker.
     *
     * @param port the client (PLAINTEXT) port on localhost; 0 picks a free one
     */
    public static KraftBroker start(int port) {
        Path dir;
        try {
            dir = Files.createTempDirectory("ripcord-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory for Kafka's log", e);
        }
        int clientPort = port == 0 ? freePort() : port;
        // A port chosen for the client listener but not bound yet is free to the OS too: it can come back here.
        int controllerPort = freePort();
        while (controllerPort == clientPort) {
            controllerPort = freePort();
        }
        try {
            Properties props = new Properties();
            props.put("process.roles", "broker,controller");
            props.put("node.id", "1");
            props.put("controller.quorum.voters", "1@localhost:" + controllerPort);
            props.put("listeners", "PLAINTEXT://localhost:" + clientPort + ",CONTROLLER://localhost:" + controllerPort);
            props.put("advertised.listeners", "PLAINTEXT://localhost:" + clientPort);
            props.put("controller.listener.names", "CONTROLLER");
            props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            props.put("inter.broker.listener.name", "PLAINTEXT");
            props.put("log.dirs", dir.toString());
            props.put("offsets.topic.replication.factor", "1");
            props.put("offsets.topic.num.partitions", "5");
            props.put("transaction.state.log.replication.factor", "1");
            props.put("transaction.state.log.min.isr", "1");
            props.put("share.coordinator.state.topic.replication.factor", "1");
            props.put("share.coordinator.state.topic.min.isr", "1");
            props.put("group.initial.rebalance.delay.ms", "0");
            props.put("num.partitions", "1");
            // The log cleaner (for compacted topics such as the consumer offsets) allocates its dedupe buffer on
            // the heap at start: 128 MB by default, a third of an idle stack's launcher. 8 MB dedupes about 300,000 keys
            // per pass, far more than a local stack's offsets topic holds.
            props.put("log.cleaner.dedupe.buffer.size", String.valueOf(8 * 1024 * 1024));

            new Formatter()
                    .setPrintStream(new java.io.PrintStream(java.io.OutputStream.nullOutputStream()))
                    .setNodeId(1)
                    .setClusterId(Uuid.randomUuid().toString())
                    .addDirectory(dir.toString())
                    .setMetadataLogDirectory(dir.toString())
                    .setControllerListenerName("CONTROLLER")
                    .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                    .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                    .run();

            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
            server.startup();
            return new KraftBroker("localhost:" + clientPort, dir, props, server);
        } catch (Exception e) {
            deleteRecursively(dir);
            throw new IllegalStateException("cannot start the embedded Kafka broker on port " + clientPort
                    + " (is another broker already listening there? use --kafka-port=N or --kafka=host:port): "
                    + e.getMessage(), e);
        }
    }

    /** The {@code host:port} clients use. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    /**
     * Stops the broker cleanly and starts it again on the same ports and the same log directory, as an operator's
     * rolling restart would: every record it acknowledged is still there afterwards, and clients reconnect by
     * themselves. For durability tests.
     */
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException("the broker is closed");
        }
        server.shutdown();
        server.awaitShutdown();
        server = new KafkaRaftServer(KafkaConfig.fromProps(config, false), Time.SYSTEM);
        server.startup();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            deleteRecursively(logDir);
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port", e);
        }
    }

    private static void deleteRecursively(Path dir) {
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
