package dev.ripcord.stack.serve;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.serve.ServeOptions.Target;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ./ripcord bench serve}: the same streaming load against one or more OpenAI-compatible servers (Ripcord's
 * gateway, llama-server, ...), level by level, the targets taking turns at each level so that they share the
 * machine's state of the moment; then each target's figures per level and the ratios to the first target.
 *
 * <p>Design note: a level is a closed loop of {@code concurrency} clients on virtual threads sending the level's
 * requests one after another until all are sent ({@link LevelPlan}: the same prompts and the same leavers for every
 * target). Every request is a streaming {@code /v1/completions} at temperature 0 with {@code ignore_eos}, so every
 * completed answer is {@code max_tokens} long whatever the model; it asks for the usage chunk
 * ({@code stream_options.include_usage}) unless the target refused it during the warm-up, and counts the text events
 * where no usage arrives. A leaving client closes its connection ({@link Call#disconnect()}). Rounds alternate the
 * targets' order (A then B in odd rounds, B then A in even ones).
 *
 * <p>Prints figures and asserts nothing: exits 0 once the run completed, whatever failed in it (failures are
 * figures), 1 when a target fails its warm-up (nothing is measured), 2 on bad arguments.
 */
public final class ServeBench {

    static final JsonMapper JSON = JsonMapper.builder().build();

    /** How long a warm-up request may take, whatever {@code --timeout} says: a cold server's first answer is slow. */
    static final Duration WARM_UP_TIMEOUT = Duration.ofMinutes(5);

    /** One target made ready: its client, the model to ask for, and whether it streams a usage chunk. */
    record Endpoint(String name, URI url, String model, boolean usage, StreamingClient client) {
    }

    /** A target that could not serve its warm-up; the message is one line. */
    static final class WarmUpException extends Exception {
        WarmUpException(String message) {
            super(message, null, false, false);
        }
    }

    private final ServeOptions options;
    /** This run's token in every request ID (base 36 of its start time in milliseconds): no two runs share an ID. */
    private final String run = Long.toString(System.currentTimeMillis(), 36);
    private final PrintStream progress;

    ServeBench(ServeOptions options, PrintStream progress) {
        this.options = options;
        this.progress = progress;
    }

    public static void main(String[] args) throws Exception {
        ServeOptions options;
        try {
            options = ServeOptions.parse(args, System.getenv()).resolve(Path.of("").toAbsolutePath());
        } catch (ServeOptions.HelpRequested help) {
            System.out.println(ServeOptions.USAGE);
            System.exit(0);
            return;
        } catch (ServeOptions.UsageException e) {
            System.err.println("ripcord bench serve: " + e.getMessage());
            System.exit(2);
            return;
        }
        PrintStream out = System.out;
        PrintStream progress = options.json() ? System.err : System.out;
        ServeReport.Machine machine = ServeReport.Machine.now();
        ServeBench bench = new ServeBench(options, progress);
        List<Endpoint> endpoints;
        try {
            endpoints = bench.prepare();
        } catch (WarmUpException e) {
            System.err.println("ripcord bench serve: " + e.getMessage());
            System.exit(1);
            return;
        }
        if (options.multiTurn() != null) {
            MultiTurnBench multiTurn = new MultiTurnBench(options, bench.run, progress);
            multiTurn.header(progress, machine, endpoints);
            multiTurn.report(out, multiTurn.run(endpoints));
            progress.printf("load average at the end: %s%n", ServeReport.Machine.loadAverage());
            System.exit(0);
            return;
        }
        if (options.cancelRetry() != null) {
            CancelRetryBench cancelRetry = new CancelRetryBench(options, bench.run, progress);
            cancelRetry.header(progress, machine, endpoints);
            cancelRetry.report(out, cancelRetry.run(endpoints));
            progress.printf("load average at the end: %s%n", ServeReport.Machine.loadAverage());
            System.exit(0);
            return;
        }
        ServeReport report = new ServeReport(options, endpoints, machine);
        report.header(progress);
        List<LevelFigures> figures = bench.run(endpoints);
        if (options.json()) {
            report.json(out, figures);
        } else {
            report.tables(out, figures);
        }
        progress.printf("load average at the end: %s%n", ServeReport.Machine.loadAverage());
        System.exit(0);
    }

    /** Finds each target's model and whether it streams usage, and warms it up. */
    List<Endpoint> prepare() throws WarmUpException {
        List<Endpoint> endpoints = new ArrayList<>();
        for (Target target : options.targets()) {
            endpoints.add(prepare(target));
        }
        return endpoints;
    }

    private Endpoint prepare(Target target) throws WarmUpException {
        String key = options.apiKeyOf(target.name());
        StreamingClient client = new StreamingClient(target.url(), key);
        String model = options.modelOf(target.name());
        if (model == null) {
            model = firstModel(target, key);
        }
        Outcome probe = warmUp(client, target, model, true);
        boolean usage = true;
        if (!probe.completed() && (probe.status() == 400 || probe.status() == 422)) {
            Outcome plain = warmUp(client, target, model, false);
            if (plain.completed()) {
                probe = plain;
                usage = false;
            }
        }
        if (!probe.completed()) {
            throw new WarmUpException("target " + target.name() + " at " + target.url() + ": the warm-up request "
                    + describe(probe));
        }
        usage = usage && probe.completionTokens() >= 0;
        for (int i = 1; i < options.warmUp(); i++) {
            warmUp(client, target, model, usage);
        }
        progress.printf("%s at %s: model %s, output tokens counted from %s%n", target.name(), target.url(), model,
                usage ? "the usage chunk" : "text events (no usage chunk)");
        return new Endpoint(target.name(), target.url(), model, usage, client);
    }

    private Outcome warmUp(StreamingClient client, Target target, String model, boolean usage)
            throws WarmUpException {
        ObjectNode body = StreamingClient.completion(model, "Once upon a time", Math.min(16, options.maxTokens()),
                true);
        if (usage) {
            StreamingClient.withUsage(body);
        }
        Call call = client.start(body, "serve-warm-up-" + UUID.randomUUID());
        try {
            return call.outcome().get(WARM_UP_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            call.disconnect();
            throw new WarmUpException("target " + target.name() + " at " + target.url()
                    + ": no answer to the warm-up request within " + WARM_UP_TIMEOUT.toMinutes() + " minutes");
        } catch (ExecutionException e) {
            throw new WarmUpException("target " + target.name() + ": warm-up failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WarmUpException("interrupted");
        }
    }

    /** The first model of the target's {@code GET /v1/models}. */
    private String firstModel(Target target, String key) throws WarmUpException {
        HttpRequest request = TestCredentials.withApiKey(
                HttpRequest.newBuilder(target.url().resolve("/v1/models")), key)
                .timeout(Duration.ofSeconds(30)).GET().build();
        try (HttpClient http = http()) {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new WarmUpException("target " + target.name() + ": GET " + request.uri() + " answered "
                        + response.statusCode() + " " + oneLine(response.body()) + " (a key: --api-key or "
                        + "RIPCORD_API_KEY; a model: --model)");
            }
            JsonNode id = JSON.readTree(response.body()).path("data").path(0).path("id");
            if (!id.isString()) {
                throw new WarmUpException("target " + target.name() + ": GET " + request.uri()
                        + " lists no model; give --model=" + target.name() + "=MODEL");
            }
            return id.asString();
        } catch (IOException e) {
            throw new WarmUpException("target " + target.name() + ": GET " + request.uri() + " failed: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WarmUpException("interrupted");
        }
    }

    /**
     * The client of every call the bench makes outside a stream ({@code /v1/models}, a worker's metrics): HTTP/1.1,
     * like {@link StreamingClient}'s, for every target. Java's default {@code HttpClient} asks a plain-HTTP server
     * for an h2c upgrade on its first request, which some servers answer by closing the connection.
     */
    static HttpClient http() {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** Every round, level by level, the targets taking turns; then the figures per target and level. */
    List<LevelFigures> run(List<Endpoint> endpoints) throws InterruptedException {
        Map<String, List<PhaseResult>> byPhase = new LinkedHashMap<>();
        boolean first = true;
        for (int round = 1; round <= options.rounds(); round++) {
            List<Endpoint> order = new ArrayList<>(endpoints);
            if (round % 2 == 0) {
                Collections.reverse(order);
            }
            for (int concurrency : options.concurrency()) {
                LevelPlan plan = LevelPlan.of(options, round, concurrency);
                for (Endpoint endpoint : order) {
                    if (!first) {
                        Thread.sleep(options.pause());
                    }
                    first = false;
                    PhaseResult result = phase(endpoint, plan);
                    byPhase.computeIfAbsent(endpoint.name() + "@" + concurrency, k -> new ArrayList<>()).add(result);
                    progress.printf("round %d/%d, concurrency %d, %s: %d requests, %d completed, %d failed, %d left, "
                            + "%.1f tok/s, %.1f s%n", round, options.rounds(), concurrency, endpoint.name(),
                            result.requests(), result.completed(), result.failed(), result.left(),
                            result.tokensPerSecond(), result.wallNanos() / 1e9);
                }
            }
        }
        List<LevelFigures> figures = new ArrayList<>();
        for (int concurrency : options.concurrency()) {
            for (Endpoint endpoint : endpoints) {
                figures.add(LevelFigures.of(endpoint.name(), concurrency,
                        byPhase.get(endpoint.name() + "@" + concurrency)));
            }
        }
        return figures;
    }

    /** One target at one level: {@code concurrency} clients share the plan's requests. */
    PhaseResult phase(Endpoint endpoint, LevelPlan plan) {
        List<RequestResult> results = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger next = new AtomicInteger();
        long start = System.nanoTime();
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < plan.concurrency(); c++) {
                clients.submit(() -> {
                    for (int i = next.getAndIncrement(); i < plan.requests(); i = next.getAndIncrement()) {
                        results.add(request(endpoint, plan, i));
                    }
                });
            }
        }
        return PhaseResult.of(List.copyOf(results), System.nanoTime() - start);
    }

    private RequestResult request(Endpoint endpoint, LevelPlan plan, int i) {
        ObjectNode body = StreamingClient.completion(endpoint.model(), plan.prompts().get(i), options.maxTokens(),
                true);
        if (endpoint.usage()) {
            StreamingClient.withUsage(body);
        }
        Call call;
        try {
            call = endpoint.client().start(body, plan.requestId(run, endpoint.name(), i));
        } catch (RuntimeException e) {
            return RequestResult.failed("client error: " + e.getClass().getSimpleName());
        }
        CompletableFuture<Long> ended = call.outcome().thenApply(o -> System.nanoTime());
        try {
            if (plan.leaves(i)) {
                try {
                    call.outcome().get(options.leaveAfter().toNanos(), TimeUnit.NANOSECONDS);
                } catch (TimeoutException stillRunning) {
                    call.disconnect();
                }
            }
            Outcome outcome;
            try {
                long remaining = call.sentNanos() + options.timeout().toNanos() - System.nanoTime();
                outcome = call.outcome().get(Math.max(0, remaining), TimeUnit.NANOSECONDS);
            } catch (TimeoutException tooLong) {
                if (call.disconnect()) {
                    return RequestResult.failed("timeout");
                }
                outcome = call.outcome().join();
            }
            if (outcome.disconnected()) {
                return RequestResult.left();
            }
            if (!outcome.completed()) {
                return RequestResult.failed(failure(outcome));
            }
            int tokens = outcome.completionTokens() >= 0 ? outcome.completionTokens() : outcome.textEvents();
            return RequestResult.completed(tokens, call.ttftNanos(), ended.join() - call.sentNanos(),
                    Stats.gaps(call.textEventNanos()));
        } catch (ExecutionException e) {
            return RequestResult.failed("client error: " + e.getCause().getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.disconnect();
            return RequestResult.failed("client error: interrupted");
        }
    }

    /** The kind of a failed request: its HTTP status, its connection error's class, or what its stream lacked. */
    static String failure(Outcome outcome) {
        if (outcome.transportError() != null) {
            String error = outcome.transportError()
                    .replaceAll("^(java\\.util\\.concurrent\\.(CompletionException|ExecutionException): )+", "");
            String type = error.replaceAll(":.*", "");
            String simple = type.substring(type.lastIndexOf('.') + 1);
            return simple.equals("HttpTimeoutException") ? "timeout" : "connection error: " + simple;
        }
        if (outcome.status() != 200) {
            return "HTTP " + outcome.status();
        }
        if (outcome.error() != null) {
            return "error event in the stream";
        }
        if ("abort".equals(outcome.finishReason())) {
            return "aborted by the server";
        }
        return "stream ended without a finish_reason";
    }

    private static String describe(Outcome outcome) {
        if (outcome.transportError() != null) {
            return "failed: " + oneLine(outcome.transportError());
        }
        return "answered " + outcome.status() + (outcome.error() == null ? "" : " " + oneLine(outcome.error()))
                + (outcome.status() == 401 ? " (give the key: --api-key=KEY or RIPCORD_API_KEY)" : "");
    }

    private static String oneLine(String text) {
        String line = text == null ? "" : text.replaceAll("\\s+", " ").strip();
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }
}
