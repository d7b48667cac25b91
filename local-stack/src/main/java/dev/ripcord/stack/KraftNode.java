package dev.ripcord.stack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;

/**
 * One node of a {@link KraftProcessCluster}, as its own JVM: a combined broker and controller configured as
 * {@link KraftBroker}'s nodes are ({@link KraftBroker#config}), on the ports, quorum and data directory its
 * arguments give. It formats the directory on its first start (a restart finds it formatted and keeps its data),
 * prints {@value #STARTED} once the server has started, and runs until it is killed. It halts when the process that
 * started it exits, so that a launcher killed without its cleanup leaves no broker behind.
 *
 * <p>Arguments, all required but the {@code services} pair: {@code --id=N --nodes=N --client=PORT --controller=PORT
 * --services=PORT --services-advertised=PORT --voters=ID@HOST:PORT,... --cluster-id=ID --dir=PATH --parent=PID}.
 */
public final class KraftNode {

    /** The line printed on standard output once the node has started. */
    static final String STARTED = "ripcord-kraft-node started";

    private KraftNode() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                throw new IllegalArgumentException("expected --name=value, got '" + arg + "'");
            }
            a.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        long parent = Long.parseLong(required(a, "parent"));
        ProcessHandle.of(parent).ifPresentOrElse(
                p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(3)),
                () -> Runtime.getRuntime().halt(3));
        int id = Integer.parseInt(required(a, "id"));
        Path dir = Path.of(required(a, "dir"));
        KraftBroker.NodePorts ports = new KraftBroker.NodePorts(Integer.parseInt(required(a, "client")),
                Integer.parseInt(required(a, "controller")), Integer.parseInt(a.getOrDefault("services", "0")),
                Integer.parseInt(a.getOrDefault("services-advertised", "0")));
        if (!Files.exists(dir.resolve("meta.properties"))) {
            Files.createDirectories(dir);
            KraftBroker.format(id, required(a, "cluster-id"), dir);
        }
        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(KraftBroker.config(id,
                Integer.parseInt(required(a, "nodes")), ports, required(a, "voters"), dir), false), Time.SYSTEM);
        server.startup();
        System.out.println(STARTED);
        System.out.flush();
        server.awaitShutdown();
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }
}
