package dev.ripcord.stack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Building {@link StackOptions} for stacks that tests and benchmarks start: free ports for every service and the
 * broker (so a test stack never collides with a developer's {@code ./ripcord up} on 8080–8082/9092), logs under
 * {@code local-stack/target/}, and the properties every test stack shares.
 */
public final class TestStacks {

    /**
     * What every test stack runs with unless a test overrides it: the {@code tiny} model with fixed weights, chunks
     * of 16 tokens and pages of 32 (a 150-byte prompt is 10 chunks over 5 pages, and chunk and page boundaries do
     * not line up), one engine thread per worker (2 cores are shared by three JVMs and the test) and a KV pool
     * large enough for the concurrent tests (decode commits prompt + max_tokens for each request up front). KV moves
     * through shared memory, as on {@code ./ripcord up} ({@link StackOptions#UP_DEFAULTS}); the abort storm's stack
     * runs TCP and the small-model {@code both} stack {@code auto} instead (see {@code KvBackendIT}).
     *
     * <p>Authentication is on, as in production (each stack generates its key and token; clients find them through
     * {@link TestCredentials}), with per-key limits far above what the storm tests send at once (500 requests
     * with one key), and cancels for IDs the gateway has not seen forwarded on Kafka: the cancellation tests
     * deliver early cancels that way. Ownership of requests in flight is checked either way. Every stack also
     * accepts {@link #SECOND_API_KEY}.
     */
    /**
     * A second API key every test stack accepts besides the one it generates (its hash is in
     * {@link #DEFAULT_PROPERTIES}): for tests of what one key may do to another's requests. Test stacks only.
     */
    public static final String SECOND_API_KEY = "rk-test-stacks-second-key-0000000000000000000000";

    /**
     * The cancel relay's answer delay is short on these one-gateway stacks: a cancel by a key that does not own the
     * request answers 404 only after it (so its timing says nothing), and the tiny model would finish a request
     * before the owner's cancel could follow the 2 s default. Stacks with several gateways set their own.
     *
     * <p>A service stops without Reactor Netty's 2 s quiet period for its event loops (after its graceful HTTP
     * shutdown and drain, which are unchanged): a suite stops its stacks and workers dozens of times, and that wait
     * is nothing a test looks at.
     */
    public static final Map<String, String> DEFAULT_PROPERTIES = Map.ofEntries(
            Map.entry("ripcord.engine.preset", "tiny"),
            Map.entry("ripcord.engine.seed", "42"),
            Map.entry("ripcord.engine.threads", "1"),
            Map.entry("ripcord.engine.page-tokens", "32"),
            Map.entry("ripcord.engine.kv-pages", "256"),
            Map.entry("ripcord.prefill.chunk-tokens", "16"),
            Map.entry("ripcord.kv.backend", "shm"),
            Map.entry("ripcord.gateway.auth.max-concurrent-streams", "2048"),
            Map.entry("ripcord.gateway.auth.rate-limit.limit-for-period", "100000"),
            Map.entry("ripcord.gateway.cancel-relay.answer-timeout", "100ms"),
            Map.entry("spring.reactor.netty.shutdown-quiet-period", "100ms"),
            Map.entry("ripcord.gateway.auth.api-key-hashes", StackCredentials.hash(SECOND_API_KEY)));

    /** The JVM's own JIT thresholds: its defaults, restated so that they win over {@link HostBudget#jitFlags}. */
    static final List<String> USUAL_THRESHOLDS = List.of("-XX:CompileThresholdScaling=1",
            "-XX:Tier4InvocationThreshold=5000", "-XX:Tier4MinInvocationThreshold=600",
            "-XX:Tier4CompileThreshold=15000");

    /**
     * Child-JVM flags for test stacks, after the host budget's ({@link HostBudget}: the same JIT split as
     * {@code ./ripcord up}, C1 alone for gateways and for workers on the scalar kernels, C2 for the engine's code
     * only in workers on the vector kernels): fewer GC threads on a 2-core machine, and the JIT's own thresholds
     * ({@link #USUAL_THRESHOLDS}) instead of {@code up}'s lower ones. A test stack starts and serves a few requests,
     * dozens of times in a suite, on two cores: compiling sooner, as {@code up} does for the requests a user sends
     * after its warm-up, would add compilations to every start and pay back in none.
     */
    static final List<String> JVM_FLAGS = Stream.concat(Stream.of("-XX:+UseSerialGC", "-Xmx512m"),
            USUAL_THRESHOLDS.stream()).toList();

    /** The JIT thresholds {@code ./ripcord up} gives its services ({@link HostBudget#jitFlags}), in that order. */
    static final List<String> UP_THRESHOLDS = Stream.concat(HostBudget.EARLY_C2_TIER.stream(),
            Stream.of(HostBudget.COMPILE_SOONER)).toList();

    /**
     * Options for a test stack that brings its own broker ({@code externalKafka}) and ports, with the JVM flags of
     * every test stack ({@link #JVM_FLAGS}).
     */
    public static StackOptions options(String externalKafka, Map<Role, Integer> ports, Map<String, String> properties,
                                       Path logDir) {
        return new StackOptions(externalKafka, 0, ports, properties, repositoryRoot(), logDir, JVM_FLAGS);
    }

    /**
     * {@code options} with the JIT thresholds {@code ./ripcord up} gives its services ({@link HostBudget#jitFlags})
     * instead of a test stack's usual ones: for a bench's own stack, which is warmed up and then measured, so that it
     * measures the request path as a user's stack runs it.
     */
    public static StackOptions asUp(StackOptions options) {
        StackOptions withThresholds = options;
        for (Role role : Role.values()) {
            withThresholds = withThresholds.withRoleJvmFlags(role, UP_THRESHOLDS);
        }
        return withThresholds;
    }

    /** {@link #DEFAULT_PROPERTIES} with {@code overrides} applied, sorted by key (the identity of a stack). */
    public static Map<String, String> withDefaults(Map<String, String> overrides) {
        Map<String, String> merged = new TreeMap<>(DEFAULT_PROPERTIES);
        merged.putAll(overrides);
        // The tiny preset's kernels are small enough that their scalar twins serve tests well under C1 alone; the
        // stacks that run them start for half the CPU (HostBudget.jitFlags gives them C1 alone). A real or small
        // model keeps its vector kernels and C2.
        if ("tiny".equals(merged.get("ripcord.engine.preset")) && !merged.containsKey("ripcord.engine.checkpoint")) {
            merged.putIfAbsent(HostBudget.KERNELS, "scalar");
        }
        return merged;
    }

    /**
     * Options for a stack on free ports with exactly {@code properties}, logging to {@code logDir}.
     *
     * <p>The ports are free when chosen, not reserved, and below the ephemeral range ({@link FreePorts}), so that
     * no outgoing connection takes one before the service binds it; only another listener could.
     */
    public static StackOptions options(Map<String, String> properties, Path logDir) {
        return options(properties, Instances.ONE_EACH, logDir);
    }

    /** As {@link #options(Map, Path)}, with {@code instances} of each role, each on a free port of its own. */
    public static StackOptions options(Map<String, String> properties, Instances instances, Path logDir) {
        Map<Role, Integer> ports = new EnumMap<>(Role.class);
        Map<Role, List<Integer>> all = new EnumMap<>(Role.class);
        // Every port at once, distinct, below the ephemeral range (FreePorts): ports chosen one after another can
        // repeat, and a port an outgoing connection may take can be gone before the service binds it.
        int count = 1;
        for (Role role : Role.values()) {
            count += instances.of(role);
        }
        java.util.Iterator<Integer> free = FreePorts.choose(count, java.util.Set.of()).iterator();
        for (Role role : Role.values()) {
            List<Integer> list = new java.util.ArrayList<>();
            for (int i = 0; i < instances.of(role); i++) {
                list.add(free.next());
            }
            ports.put(role, list.get(0));
            all.put(role, list);
        }
        int kafkaPort = free.next();
        return new StackOptions(null, kafkaPort, ports, new LinkedHashMap<>(properties), repositoryRoot(), logDir,
                JVM_FLAGS, all);
    }

    /**
     * How many instances of each role a test stack runs; part of a stack's identity with its properties.
     *
     * @param gateways gateways, each routing to every prefill and decode instance
     * @param prefills prefill workers
     * @param decodes  decode workers
     */
    public record Instances(int gateways, int prefills, int decodes) {

        public static final Instances ONE_EACH = new Instances(1, 1, 1);

        public Instances {
            if (gateways < 1 || prefills < 1 || decodes < 1) {
                throw new IllegalArgumentException("at least one instance of each role: " + gateways + "/"
                        + prefills + "/" + decodes);
            }
        }

        public int of(Role role) {
            return switch (role) {
                case GATEWAY -> gateways;
                case PREFILL -> prefills;
                case DECODE -> decodes;
            };
        }
    }

    /**
     * The repository root, where {@code <module>/target/*-exec.jar} are: the working directory or the closest
     * directory above it that holds the {@code ripcord} script (Surefire runs in {@code local-stack/}).
     */
    public static Path repositoryRoot() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("ripcord")) && Files.isDirectory(dir.resolve("local-stack"))) {
                return dir;
            }
        }
        throw new IllegalStateException("cannot find the repository root (a directory with the ripcord script) above "
                + Path.of("").toAbsolutePath());
    }
}
