package dev.ripcord.stack.serve;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.serve.ServeBench.Endpoint;
import dev.ripcord.stack.serve.ServeOptions.MultiTurn;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ./ripcord bench serve --scenario=multi-turn}: {@code conversations} chats of {@code turns} turns each over
 * one shared system prompt, every turn resending the whole history as a chat client does, against each target in
 * turn at each concurrency level. It reports time to first token of the first turns apart from the later ones
 * (turns 2..K, where a server that reuses the KV of a prompt prefix computes only the new turn), and, where it can
 * read them, the prefix-cache counters of each target's prefill workers over the phase.
 *
 * <p>Design note: the prompts are plain text sent to {@code /v1/completions} (so any OpenAI-compatible server takes
 * them): the system prompt, then per turn {@code "\nUser: "} and the user's words, {@code "\nAssistant:"}, and, in
 * later turns, a fixed answer of {@code max_tokens} words after each earlier {@code "Assistant:"}. The answer the
 * server generated is not fed back: a fixed one keeps the prompts the same for every target, and each turn's prompt
 * still starts with the whole of the previous one, which is what prefix reuse needs. Words come from
 * {@link LevelPlan#WORDS} (about one token each); the system prompt is the same for every conversation and target,
 * user turns differ by conversation and turn, all drawn from {@code --seed}. Each conversation is a sequence: its
 * turn {@code k+1} is sent when turn {@code k} ended. {@code concurrency} clients take conversations one after
 * another.
 */
final class MultiTurnBench {

    /** One turn's outcome: which turn, whether it completed, its time to first token. */
    record TurnResult(int turn, boolean completed, long ttftNanos, String failure) {
    }

    /** A target's prefix-cache counters at one instant, per prefill worker (null: none to read there). */
    record CacheCounters(Map<URI, long[]> byWorker) {
        static final CacheCounters NONE = new CacheCounters(Map.of());
    }

    /** One target at one level: every turn's result and the counters' growth per worker over the phase. */
    record Phase(String target, int concurrency, List<TurnResult> turns, Map<URI, long[]> cacheDelta,
                 long wallNanos) {
    }

    static final String HITS = "ripcord_prefix_cache_hits_total";
    static final String QUERIES = "ripcord_prefix_cache_queries_total";

    private final ServeOptions options;
    private final MultiTurn scenario;
    private final String run;
    private final PrintStream progress;
    private final String system;

    MultiTurnBench(ServeOptions options, String run, PrintStream progress) {
        this.options = options;
        this.scenario = options.multiTurn();
        this.run = run;
        this.progress = progress;
        this.system = words(new Random(options.seed()), scenario.systemTokens());
    }

    void header(PrintStream out, ServeReport.Machine machine, List<Endpoint> endpoints) {
        out.printf("serve bench, multi-turn, %s; CPU: %s, %d cores; load average %s at the start%n", machine.when(),
                machine.cpu(), machine.cores(), machine.loadAtStart());
        out.printf("targets: %s%n", String.join("; ", endpoints.stream()
                .map(e -> e.name() + " = " + e.url() + " (model " + e.model() + ")").toList()));
        out.printf("load: %d conversations x %d turns, a shared system prompt of %d words, about %d words per user "
                + "turn, max_tokens %d, temperature 0, EOS ignored; concurrency %s; seed %d%n",
                scenario.conversations(), scenario.turns(), scenario.systemTokens(), scenario.turnTokens(),
                options.maxTokens(), options.concurrency(), options.seed());
    }

    /** Every round, level by level, the targets taking turns. */
    List<Phase> run(List<Endpoint> endpoints) throws InterruptedException {
        List<Phase> phases = new ArrayList<>();
        boolean first = true;
        for (int round = 1; round <= options.rounds(); round++) {
            List<Endpoint> order = new ArrayList<>(endpoints);
            if (round % 2 == 0) {
                Collections.reverse(order);
            }
            for (int concurrency : options.concurrency()) {
                for (Endpoint endpoint : order) {
                    if (!first) {
                        Thread.sleep(options.pause());
                    }
                    first = false;
                    Phase phase = phase(endpoint, round, concurrency);
                    phases.add(phase);
                    long failed = phase.turns().stream().filter(t -> !t.completed()).count();
                    progress.printf("round %d/%d, concurrency %d, %s: %d turns, %d failed, %.1f s%n", round,
                            options.rounds(), concurrency, endpoint.name(), phase.turns().size(), failed,
                            phase.wallNanos() / 1e9);
                }
            }
        }
        return phases;
    }

    Phase phase(Endpoint endpoint, int round, int concurrency) {
        List<URI> workers = options.prefillMetrics().getOrDefault(endpoint.name(), List.of());
        CacheCounters before = counters(workers);
        List<TurnResult> results = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger next = new AtomicInteger();
        long start = System.nanoTime();
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < concurrency; c++) {
                clients.submit(() -> {
                    for (int conv = next.getAndIncrement(); conv < scenario.conversations();
                         conv = next.getAndIncrement()) {
                        conversation(endpoint, round, concurrency, conv, results);
                    }
                });
            }
        }
        long wall = System.nanoTime() - start;
        CacheCounters after = counters(workers);
        Map<URI, long[]> delta = new LinkedHashMap<>();
        after.byWorker().forEach((worker, counts) -> {
            long[] was = before.byWorker().getOrDefault(worker, new long[2]);
            delta.put(worker, new long[] {counts[0] - was[0], counts[1] - was[1]});
        });
        return new Phase(endpoint.name(), concurrency, List.copyOf(results), delta, wall);
    }

    private void conversation(Endpoint endpoint, int round, int concurrency, int conv, List<TurnResult> results) {
        StringBuilder history = new StringBuilder(system);
        Random random = new Random(options.seed() * 31 + conv);
        String answer = " " + words(new Random(options.seed() + 1), options.maxTokens()).strip();
        for (int turn = 1; turn <= scenario.turns(); turn++) {
            history.append("\nUser: ").append(words(random, scenario.turnTokens()).strip()).append("\nAssistant:");
            String id = "serve-" + run + "-" + endpoint.name() + "-r" + round + "-c" + concurrency + "-conv" + conv
                    + "-turn" + turn;
            TurnResult result = turn(endpoint, history.toString(), id, turn);
            results.add(result);
            history.append(answer);
        }
    }

    private TurnResult turn(Endpoint endpoint, String prompt, String id, int turn) {
        ObjectNode body = StreamingClient.completion(endpoint.model(), prompt, options.maxTokens(), true);
        if (endpoint.usage()) {
            StreamingClient.withUsage(body);
        }
        Call call;
        try {
            call = endpoint.client().start(body, id);
        } catch (RuntimeException e) {
            return new TurnResult(turn, false, 0, "client error: " + e.getClass().getSimpleName());
        }
        try {
            Outcome outcome;
            try {
                outcome = call.outcome().get(options.timeout().toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException tooLong) {
                call.disconnect();
                return new TurnResult(turn, false, 0, "timeout");
            }
            if (!outcome.completed()) {
                return new TurnResult(turn, false, 0, ServeBench.failure(outcome));
            }
            return new TurnResult(turn, true, call.ttftNanos(), null);
        } catch (ExecutionException e) {
            return new TurnResult(turn, false, 0, "client error: " + e.getCause().getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.disconnect();
            return new TurnResult(turn, false, 0, "client error: interrupted");
        }
    }

    /** {@code n} words of {@link LevelPlan#WORDS}, each with its leading space. */
    static String words(Random random, int n) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < n; i++) {
            text.append(' ').append(LevelPlan.WORDS.get(random.nextInt(LevelPlan.WORDS.size())));
        }
        return text.toString();
    }

    /** Each worker's {@code [hits, queries]} now; a worker that does not answer, or reports neither, is left out. */
    static CacheCounters counters(List<URI> workers) {
        if (workers.isEmpty()) {
            return CacheCounters.NONE;
        }
        Map<URI, long[]> counts = new LinkedHashMap<>();
        try (HttpClient http = ServeBench.http()) {
            for (URI worker : workers) {
                HttpRequest request = HttpRequest.newBuilder(worker.resolve("/actuator/prometheus"))
                        .timeout(Duration.ofSeconds(10)).GET().build();
                try {
                    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                    if (response.statusCode() == 200) {
                        long[] parsed = parse(response.body());
                        if (parsed != null) {
                            counts.put(worker, parsed);
                        }
                    }
                } catch (IOException e) {
                    // not readable: this worker's hits are "none" in the report
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        return new CacheCounters(counts);
    }

    /**
     * {@code [hits, queries]} from a Prometheus scrape: the sums of {@value #HITS} and {@value #QUERIES} over their
     * series, or null when the scrape has neither (a worker without a prefix cache).
     */
    static long[] parse(String scrape) {
        double hits = 0;
        double queries = 0;
        boolean found = false;
        for (String line : scrape.lines().toList()) {
            if (line.startsWith("#")) {
                continue;
            }
            String name = line.split("[{ ]", 2)[0];
            if (name.equals(HITS) || name.equals(QUERIES)) {
                String[] parts = line.strip().split("\\s+");
                double value = Double.parseDouble(parts[parts.length - 1]);
                if (name.equals(HITS)) {
                    hits += value;
                } else {
                    queries += value;
                }
                found = true;
            }
        }
        return found ? new long[] {Math.round(hits), Math.round(queries)} : null;
    }

    /** Per target and level: TTFT p50 of first turns, of turns 2..K, the ratio to the first target, the hits. */
    void report(PrintStream out, List<Phase> phases) {
        out.println();
        out.printf("%-14s %5s %9s %7s %14s %18s %12s%n", "target", "conc", "turns", "failed", "TTFT p50 turn 1",
                "TTFT p50 turns 2.." + scenario.turns(), "vs first");
        Map<Integer, Double> firstLater = new LinkedHashMap<>();
        Map<String, List<Phase>> byLevel = new LinkedHashMap<>();
        for (Phase p : phases) {
            byLevel.computeIfAbsent(p.target() + "@" + p.concurrency(), k -> new ArrayList<>()).add(p);
        }
        String firstTarget = options.targets().getFirst().name();
        for (int concurrency : options.concurrency()) {
            for (ServeOptions.Target target : options.targets()) {
                List<Phase> level = byLevel.getOrDefault(target.name() + "@" + concurrency, List.of());
                List<TurnResult> turns = level.stream().flatMap(p -> p.turns().stream()).toList();
                double first = p50(turns, true);
                double later = p50(turns, false);
                if (target.name().equals(firstTarget)) {
                    firstLater.put(concurrency, later);
                }
                Double base = firstLater.get(concurrency);
                String ratio = base == null || Double.isNaN(later) || Double.isNaN(base) || base == 0 ? "-"
                        : String.format("%.2fx", later / base);
                out.printf("%-14s %5d %9d %7d %14s %18s %12s%n", target.name(), concurrency, turns.size(),
                        turns.stream().filter(t -> !t.completed()).count(), seconds(first), seconds(later), ratio);
            }
        }
        out.println();
        out.println("prefix-cache hits over each phase (prefill workers' ripcord_prefix_cache_hits_total / "
                + "queries_total, in tokens):");
        for (Phase p : phases) {
            if (p.cacheDelta().isEmpty()) {
                out.printf("  %s @ %d: none (no prefill worker metrics to read%s)%n", p.target(), p.concurrency(),
                        options.prefillMetrics().containsKey(p.target()) ? ", or they have no prefix-cache counters"
                                : "; --prefill-metrics=" + p.target() + "=URL,...");
                continue;
            }
            long hits = 0;
            long queries = 0;
            List<String> each = new ArrayList<>();
            for (Map.Entry<URI, long[]> e : p.cacheDelta().entrySet()) {
                hits += e.getValue()[0];
                queries += e.getValue()[1];
                each.add(e.getKey().getAuthority() + " " + e.getValue()[0] + "/" + e.getValue()[1]);
            }
            out.printf("  %s @ %d: %d of %d prompt tokens hit (%s); per worker: %s%n", p.target(), p.concurrency(),
                    hits, queries, queries == 0 ? "-" : String.format("%.1f %%", 100.0 * hits / queries),
                    String.join(", ", each));
        }
    }

    /** Median TTFT in seconds of completed first turns ({@code firstTurn}) or later turns; NaN when there is none. */
    static double p50(List<TurnResult> turns, boolean firstTurn) {
        double[] ttft = turns.stream().filter(t -> t.completed() && (t.turn() == 1) == firstTurn)
                .mapToDouble(t -> t.ttftNanos() / 1e9).sorted().toArray();
        if (ttft.length == 0) {
            return Double.NaN;
        }
        return ttft.length % 2 == 1 ? ttft[ttft.length / 2] : (ttft[ttft.length / 2 - 1] + ttft[ttft.length / 2]) / 2;
    }

    private static String seconds(double value) {
        return Double.isNaN(value) ? "-" : String.format("%.3f s", value);
    }
}
