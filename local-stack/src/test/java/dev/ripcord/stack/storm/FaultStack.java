package dev.ripcord.stack.storm;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.ripcord.cancel.Sabotage;
import dev.ripcord.stack.FaultProxy;
import dev.ripcord.stack.KraftBroker;
import dev.ripcord.stack.KraftProcessCluster;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.StackOptions;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;

/**
 * A test stack built to be broken: a three-node KRaft cluster, each node its own process ({@link KraftProcessCluster}:
 * a broker can be killed with SIGKILL), whose services' listeners are reached through one {@link FaultProxy} per node
 * (services to Kafka), and gateways that reach every worker through one proxy per worker (gateway to workers). The
 * harness (audit, operator cancels, probes) reaches Kafka directly.
 *
 * <p>Lifecycle: {@link #start} starts the cluster, the proxies and the stack; {@link #close()} stops the stack, the
 * proxies, then the cluster (every node process killed and reaped, also when a start fails). Idempotent.
 */
final class FaultStack implements AutoCloseable {

    static final int BROKERS = 3;
    /** The services' Kafka clients' {@code request.timeout.ms}: Kafka's consumer default is 30 s. */
    static final java.time.Duration KAFKA_REQUEST_TIMEOUT = java.time.Duration.ofSeconds(10);

    private final KraftProcessCluster cluster;
    private final List<FaultProxy> kafkaProxies;
    private final Map<String, FaultProxy> workerProxies;
    private final TestStack stack;
    private boolean closed;

    private FaultStack(KraftProcessCluster cluster, List<FaultProxy> kafkaProxies,
                       Map<String, FaultProxy> workerProxies, TestStack stack) {
        this.cluster = cluster;
        this.kafkaProxies = kafkaProxies;
        this.workerProxies = workerProxies;
        this.stack = stack;
    }

    static FaultStack start(String name, Map<String, String> overrides, TestStacks.Instances instances, Path logDir,
                            PrintStream console) {
        return start(name, overrides, instances, logDir, console, List.of());
    }

    /**
     * {@link #start}, with the services of each {@code sabotage} kind's service started with it
     * ({@code -Dripcord.sabotage}) and every service given the bench's marker ({@link LocalStack#BENCH_STARTED}),
     * without which they refuse it. At most one kind per service.
     */
    static FaultStack start(String name, Map<String, String> overrides, TestStacks.Instances instances, Path logDir,
                            PrintStream console, List<Sabotage> sabotage) {
        List<FaultProxy> kafkaProxies = new ArrayList<>();
        Map<String, FaultProxy> workerProxies = new LinkedHashMap<>();
        KraftProcessCluster cluster = null;
        try {
            List<KraftBroker.NodePorts> nodes = new ArrayList<>();
            for (int i = 1; i <= BROKERS; i++) {
                int services = freePort();
                FaultProxy proxy = FaultProxy.start("kafka-" + i, 0, "localhost", services);
                kafkaProxies.add(proxy);
                nodes.add(new KraftBroker.NodePorts(0, 0, services, proxy.port()));
            }
            cluster = KraftProcessCluster.start(nodes, logDir);

            Map<String, String> properties = new LinkedHashMap<>(overrides);
            properties.put("ripcord.cancel.replication-factor", String.valueOf(BROKERS));
            properties.put("ripcord.lifecycle.replication-factor", String.valueOf(BROKERS));
            // Every Kafka client of the services gives up on a request unanswered this long (the cancel producers'
            // own setting is the same): a partition that lasts longer (FaultSchedule.PARTITION) cuts their
            // connections, not only stalls them.
            properties.putIfAbsent("spring.cloud.stream.kafka.binder.configuration.request.timeout.ms",
                    String.valueOf(KAFKA_REQUEST_TIMEOUT.toMillis()));
            Map<String, String> stackProperties = TestStacks.withDefaults(properties);
            StackOptions planned = TestStacks.options(stackProperties, instances, logDir);
            Map<String, String> withProxies = new LinkedHashMap<>(stackProperties);
            for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
                List<String> urls = new ArrayList<>();
                List<Integer> ports = planned.ports(role);
                for (int i = 0; i < ports.size(); i++) {
                    String id = role.shortName() + "-" + (i + 1);
                    FaultProxy proxy = FaultProxy.start("gateway->" + id, 0, "localhost", ports.get(i));
                    workerProxies.put(id, proxy);
                    urls.add("http://localhost:" + proxy.port());
                }
                withProxies.put("ripcord.gateway." + role.shortName() + "-workers", String.join(",", urls));
            }
            Map<Role, List<String>> roleFlags = new java.util.EnumMap<>(Role.class);
            planned.roleJvmFlags().forEach((role, flags) -> roleFlags.put(role, new ArrayList<>(flags)));
            java.util.Set<Role> sabotaged = java.util.EnumSet.noneOf(Role.class);
            for (Sabotage kind : sabotage) {
                Role role = Role.valueOf(kind.service.toUpperCase(java.util.Locale.ROOT));
                if (!sabotaged.add(role)) {
                    throw new IllegalArgumentException("two sabotage kinds for the " + kind.service + " service");
                }
                System.setProperty(LocalStack.BENCH_STARTED, "true");
                roleFlags.computeIfAbsent(role, r -> new ArrayList<>()).add("-D" + Sabotage.PROPERTY + "=" + kind.id);
            }
            StackOptions options = new StackOptions(cluster.servicesBootstrapServers(), 0, planned.ports(),
                    withProxies, planned.root(), planned.logDir(), planned.jvmFlags(), allPorts(planned), roleFlags);
            LocalStack local = LocalStack.start(options, console);
            return new FaultStack(cluster, kafkaProxies, workerProxies,
                    TestStack.of(name, stackProperties, instances, local));
        } catch (RuntimeException e) {
            kafkaProxies.forEach(FaultProxy::close);
            workerProxies.values().forEach(FaultProxy::close);
            if (cluster != null) {
                cluster.close();
            }
            throw e;
        }
    }

    private static Map<Role, List<Integer>> allPorts(StackOptions options) {
        Map<Role, List<Integer>> all = new java.util.EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            all.put(role, options.ports(role));
        }
        return all;
    }

    TestStack stack() {
        return stack;
    }

    LocalStack local() {
        return stack.localStack();
    }

    KraftProcessCluster cluster() {
        return cluster;
    }

    /** The cluster's plain listeners: the harness's way in, never through a proxy. */
    String directBootstrap() {
        return cluster.bootstrapServers();
    }

    List<FaultProxy> kafkaProxies() {
        return kafkaProxies;
    }

    Map<String, FaultProxy> workerProxies() {
        return workerProxies;
    }

    /** Every proxy, gateway-to-worker ones first. */
    List<FaultProxy> allProxies() {
        List<FaultProxy> all = new ArrayList<>(workerProxies.values());
        all.addAll(kafkaProxies);
        return all;
    }

    /** The pid of instance {@code index} (from 0) of {@code role}. */
    long pid(Role role, int index) {
        return local().instances().stream().filter(i -> i.role() == role).skip(index).findFirst().orElseThrow()
                .pid();
    }

    String describeProxies() {
        return allProxies().stream().map(p -> p.name() + " :" + p.port() + " -> " + p.upstream())
                .collect(Collectors.joining(", "));
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            // Healed first: a service that stops while its Kafka is partitioned would wait out its clients' timeouts.
            allProxies().forEach(FaultProxy::heal);
            stack.close();
        } finally {
            allProxies().forEach(FaultProxy::close);
            cluster.close();
        }
    }

    private static int freePort() {
        return dev.ripcord.stack.FreePorts.one();
    }
}
