package dev.ripcord.stack.bench;

import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.Endpoints;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;

/**
 * Many concurrent streaming clients, a share of whom disconnect at a random moment (while queued
 * or prefilling, or after a random number of streamed tokens), against the whole stack. Prints throughput (tokens
 * and requests per second), time to first token (p50, p99), errors by kind, and then checks that nothing leaked:
 * both workers back to zero pages, sessions, registrations and queued/running jobs with only the page pool's
 * region, and the gateway with no request, leg or stream left. Exits with status 1 if anything leaked.
 *
 * <p>Not a test: it prints figures and asserts only the leak check. Build the test classpath once, then run it from
 * the repository root with the JDK 25 that {@code ./ripcord java} names:
 *
 * <pre>
 *   ./mvnw -q -pl local-stack -am -DskipTests package dependency:build-classpath -Dmdep.includeScope=test \
 *       -Dmdep.outputFile=target/bench.classpath
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *       -cp local-stack/target/test-classes:local-stack/target/classes:$(cat local-stack/target/bench.classpath) \
 *       dev.ripcord.stack.bench.LoadBench --clients=200 --requests-per-client=3 --disconnect-share=0.25
 *   ... LoadBench --gateway=http://localhost:8080 --prefill=http://localhost:8081 --decode=http://localhost:8082
 * </pre>
 */
public final class LoadBench {

    static final String USAGE = BenchUsage.read(LoadBench.class);

    /** What a started stack needs to take 200+ streams at once on a laptop; each can be overridden. */
    static final Map<String, String> STACK_DEFAULTS = Map.of(
            "ripcord.engine.kv-pages", "4096",
            "ripcord.prefill.queue-capacity", "1024",
            "ripcord.prefill.max-running", "4",
            "ripcord.decode.max-batch", "64",
            "ripcord.gateway.auth.max-concurrent-streams", "4096",
            "ripcord.gateway.auth.rate-limit.enabled", "false");

    private final Endpoints endpoints;
    private final StreamingClient client;
    private final int maxTokens;
    private final int promptBytes;
    private final double disconnectShare;

    private final LongAdder completed = new LongAdder();
    private final LongAdder disconnected = new LongAdder();
    private final LongAdder completedTokens = new LongAdder();
    private final LongAdder streamedEvents = new LongAdder();
    private final List<Long> ttftNanos = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> disconnectsBy = new ConcurrentHashMap<>();

    LoadBench(Endpoints endpoints, int maxTokens, int promptBytes, double disconnectShare) {
        this.endpoints = endpoints;
        this.client = new StreamingClient(endpoints.gateway());
        this.maxTokens = maxTokens;
        this.promptBytes = promptBytes;
        this.disconnectShare = disconnectShare;
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(args, STACK_DEFAULTS, USAGE);
        Map<String, String> options = parsed.options();
        Map<String, String> stackProperties = parsed.stackProperties();
        int clients = Integer.parseInt(options.getOrDefault("clients", "200"));
        int perClient = Integer.parseInt(options.getOrDefault("requests-per-client", "3"));
        double share = Double.parseDouble(options.getOrDefault("disconnect-share", "0.25"));
        int maxTokens = Integer.parseInt(options.getOrDefault("max-tokens", "32"));
        int promptBytes = Integer.parseInt(options.getOrDefault("prompt-bytes", "40"));
        long seed = Long.parseLong(options.getOrDefault("seed", "7"));
        PrintStream out = System.out;

        LocalStack started = null;
        Endpoints endpoints;
        if (options.containsKey("gateway") && options.containsKey("prefill") && options.containsKey("decode")) {
            endpoints = new Endpoints(URI.create(options.get("gateway")), URI.create(options.get("prefill")),
                    URI.create(options.get("decode")), options.getOrDefault("model", "ripcord-small"));
        } else {
            stackProperties.putIfAbsent("ripcord.engine.preset", options.getOrDefault("preset", "tiny"));
            Map<String, String> properties = TestStacks.withDefaults(stackProperties);
            Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs/load");
            out.println("starting a stack with " + properties + " (logs in " + logDir + ") ...");
            started = LocalStack.start(TestStacks.asUp(TestStacks.options(properties, logDir)), null);
            Runtime.getRuntime().addShutdownHook(new Thread(started::close, "bench-stack-shutdown")); // on Ctrl-C
            endpoints = new Endpoints(URI.create(started.url(Role.GATEWAY)), URI.create(started.url(Role.PREFILL)),
                    URI.create(started.url(Role.DECODE)), "ripcord-" + properties.get("ripcord.engine.preset"));
        }
        boolean leaked;
        try {
            LoadBench bench = new LoadBench(endpoints, maxTokens, promptBytes, share);
            out.printf("%d clients x %d requests, %.0f%% abandoned at random, prompt %d bytes, max_tokens %d, "
                    + "machine: %d cores, load average %s%n", clients, perClient, share * 100, promptBytes, maxTokens,
                    Runtime.getRuntime().availableProcessors(), loadAverage());
            bench.warmUp();
            bench.run(clients, perClient, seed, out);
            leaked = !bench.checkLeaks(out);
        } finally {
            if (started != null) {
                started.close();
            }
        }
        System.exit(leaked ? 1 : 0);
    }

    private void warmUp() throws Exception {
        for (int i = 0; i < 4; i++) {
            client.start(StreamingClient.completion(endpoints.model(), prompt(i), maxTokens, true),
                    "load-warmup-" + i + "-" + UUID.randomUUID()).outcome().get(5, TimeUnit.MINUTES);
        }
        endpoints.awaitWorkersIdle();
    }

    void run(int clients, int perClient, long seed, PrintStream out) throws Exception {
        AtomicLong firstStart = new AtomicLong(Long.MAX_VALUE);
        AtomicLong lastEnd = new AtomicLong();
        List<Future<?>> futures = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                int clientIndex = c;
                futures.add(threads.submit(() -> {
                    java.util.Random random = new java.util.Random(seed * 1_000_003L + clientIndex);
                    for (int r = 0; r < perClient; r++) {
                        long start = System.nanoTime();
                        firstStart.accumulateAndGet(start, Math::min);
                        one(clientIndex, r, random);
                        lastEnd.accumulateAndGet(System.nanoTime(), Math::max);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
        }
        double seconds = (lastEnd.get() - firstStart.get()) / 1e9;
        List<Long> ttft = new ArrayList<>(ttftNanos);
        Collections.sort(ttft);
        out.printf("%nwall %.1f s; %d requests: %d completed, %d abandoned by the client (%s), %d errors%n", seconds,
                (long) clients * perClient, completed.sum(), disconnected.sum(), new TreeMap<>(disconnectsBy),
                errors.values().stream().mapToInt(AtomicInteger::get).sum());
        out.printf("throughput: %.1f tokens/s (completed requests' tokens), %.1f streamed events/s (all), "
                + "%.2f completed requests/s%n", completedTokens.sum() / seconds, streamedEvents.sum() / seconds,
                completed.sum() / seconds);
        out.printf("TTFT of completed requests: p50 %.0f ms, p99 %.0f ms, max %.0f ms (n=%d)%n", percentile(ttft, 50),
                percentile(ttft, 99), ttft.isEmpty() ? 0 : ttft.getLast() / 1e6, ttft.size());
        out.printf("errors by kind: %s%n", errors.isEmpty() ? "none" : new TreeMap<>(errors));
    }

    /** One request: either read to the end, or abandoned at a random moment. */
    private void one(int clientIndex, int r, java.util.Random random) throws Exception {
        String id = "load-" + clientIndex + "-" + r + "-" + UUID.randomUUID();
        Call call = client.start(StreamingClient.completion(endpoints.model(), prompt(clientIndex), maxTokens, true),
                id);
        if (random.nextDouble() < disconnectShare) {
            if (random.nextBoolean()) {
                // Before the first token: queued, prefilling or with KV in flight.
                Thread.sleep(random.nextInt(1, 1500));
                count(disconnectsBy, call.disconnect() ? "before-or-at-first-token" : "too-late");
            } else {
                int after = 1 + random.nextInt(Math.max(1, maxTokens - 1));
                // whichever comes first: that many text events, or the end of the answer (a token may carry no
                // text of its own, so a stream can end with fewer text events than tokens)
                java.util.concurrent.CompletableFuture.anyOf(call.textEvents(after), call.outcome())
                        .get(10, TimeUnit.MINUTES);
                count(disconnectsBy, call.disconnect() ? "mid-stream" : "too-late");
            }
        }
        Outcome outcome = call.outcome().get(10, TimeUnit.MINUTES);
        streamedEvents.add(outcome.textEvents());
        if (outcome.disconnected()) {
            disconnected.increment();
        } else if (outcome.completed()) {
            completed.increment();
            completedTokens.add(maxTokens);
            ttftNanos.add(call.ttftNanos());
        } else {
            count(errors, kind(outcome));
        }
    }

    private static String kind(Outcome outcome) {
        if (outcome.transportError() != null) {
            return "transport: " + outcome.transportError().replaceAll(":.*", "");
        }
        String error = outcome.error() == null ? "" : outcome.error();
        java.util.regex.Matcher code = java.util.regex.Pattern.compile("\"code\":\"([a-z_]+)\"").matcher(error);
        String what = code.find() ? code.group(1) : "no error code";
        return outcome.status() == 200 ? "stream error " + what : "HTTP " + outcome.status() + " " + what;
    }

    /** True if nothing leaked; prints what each service holds. */
    boolean checkLeaks(PrintStream out) {
        boolean clean = true;
        try {
            endpoints.awaitWorkersIdle();
        } catch (AssertionError e) {
            out.println("LEAK: " + e.getMessage());
            clean = false;
        }
        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            WorkerStatus s = endpoints.status(role);
            out.printf("%s at the end: pages %d, sessions %d, regions %d (the page pool), registrations %d, queued %d, "
                    + "running %d; aborts counted %d%n", role.shortName(), s.livePages(), s.liveSessions(),
                    s.liveRegions(), s.liveRegistrations(), s.queued(), s.running(), s.aborts());
        }
        Prometheus gateway = Prometheus.scrape(endpoints.gateway());
        Map<String, Double> held = new LinkedHashMap<>();
        for (String gauge : List.of("ripcord_gateway_requests_active", "ripcord_gateway_legs_linked",
                "ripcord_gateway_stream_open", "ripcord_gateway_stream_buffered")) {
            held.put(gauge, gateway.sum(gauge));
        }
        out.printf("gateway at the end: %s; stream buffer peak %.0f of %.0f%n", held,
                gateway.sum("ripcord_gateway_stream_buffered_peak"),
                gateway.sum("ripcord_gateway_stream_buffer_capacity"));
        if (held.values().stream().anyMatch(v -> v != 0)) {
            out.println("LEAK: the gateway still holds " + held);
            clean = false;
        }
        out.println(clean ? "leaks: none (pages, sessions, regions, registrations, requests, legs, streams)"
                : "leaks: FOUND");
        return clean;
    }

    private String prompt(int variant) {
        StringBuilder text = new StringBuilder();
        while (text.length() < promptBytes) {
            text.append("client ").append(variant).append(" asks about load. ");
        }
        return text.substring(0, promptBytes);
    }

    private static void count(Map<String, AtomicInteger> counts, String key) {
        counts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    }

    private static double percentile(List<Long> sorted, int p) {
        if (sorted.isEmpty()) {
            return 0;
        }
        int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index))) / 1e6;
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
        }
    }
}
