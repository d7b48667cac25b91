package dev.ripcord.stack;

import static dev.ripcord.stack.JsonStrings.quote;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Requests sent end to end through every gateway before {@code ./ripcord up} says it is up, so that the first request
 * of a user runs on a warm request path, not only on loaded classes: the gateway's parsing, routing and SSE writing,
 * its pooled connections to every worker (opened here), the workers' HTTP handlers, admission, KV transfer
 * sessions, the engine's kernels at a few prompt lengths, and the text codec. A service's {@code /actuator/health}
 * says it can serve; this makes the first answers come at the speed of the later ones.
 *
 * <p>"Warm" means compiled: each of the thousands of methods on the request path runs a few times per request, and
 * the JIT compiles a method only after it has run a number of times ({@link HostBudget#jitFlags} scales that number
 * down to a twentieth). Measured on stories15M, the requests that follow {@value #DEFAULT_ROUNDS} rounds (240
 * requests, 25-30 s on an idle two-core machine) are at their steady time to first token.
 *
 * <p>Each round sends, through each gateway, {@value #MIN_CONCURRENT} concurrent streaming completions, or as many
 * as the stack has instances of its most numerous worker role if that is more (routing spreads concurrent requests
 * over the instances, so each worker gets some; several at once warm decode's batched steps too), then one
 * non-streaming completion and one streaming chat completion. Every request is read to its end: {@link #run}
 * returns only once all of them have been answered. No round starts once {@link #DEFAULT_BUDGET} has passed (the
 * first round always runs): stories15M's 40 rounds take 25-30 s on two cores, but a 1B model answers a round in
 * seconds, and 40 of them would keep {@code up} from saying it is up for minutes. A request that fails is counted and reported, never retried: a
 * stack whose warm-up fails still comes up (its health said so), and the report says what failed.
 */
public final class StackWarmUp {

    /** Rounds {@code ./ripcord up} runs unless {@code --warm-up=N} says otherwise. */
    public static final int DEFAULT_ROUNDS = 40;

    /** Time after which no further round starts, so that a large model's warm-up ends in about a minute. */
    public static final Duration DEFAULT_BUDGET = Duration.ofSeconds(60);

    /** The fewest concurrent streaming completions a round of {@link #warm} sends through a gateway. */
    static final int MIN_CONCURRENT = 4;

    /**
     * Marks every request as warm-up traffic (the gateway's {@code generation.WarmUp}): the gateways of a local stack
     * ({@link LocalStack} sets {@code ripcord.gateway.warm-up-header=true}) keep it out of their serving metrics and
     * the audit's request counts, which are the user's.
     */
    static final String WARM_UP_HEADER = "X-Ripcord-Warm-Up";

    private static final Pattern MODEL_ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");
    private static final String[] PROMPTS = {"Once upon a time", "Once upon a time, there was a little girl named Lily."
            + " She liked to play in the park with her friends.", "The cat"};

    /**
     * What a warm-up did: requests answered in full, the failures (one line each), and the rounds it ran through
     * every gateway (fewer than asked when the time budget ran out).
     */
    public record Result(int answered, List<String> failures, int rounds) {
        public Result {
            failures = List.copyOf(failures);
        }
    }

    /** {@code --warm-up=N} taken out of {@code up}'s arguments: the rounds, and the arguments left. */
    public record Parsed(int rounds, String[] rest) {
    }

    /** Reads {@code --warm-up=N} (0–100; the last one wins), leaving the other arguments in order. */
    public static Parsed parse(String[] args) {
        int rounds = DEFAULT_ROUNDS;
        List<String> rest = new ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--warm-up=")) {
                String value = arg.substring("--warm-up=".length());
                try {
                    rounds = Integer.parseInt(value);
                    if (rounds < 0 || rounds > 100) {
                        throw new NumberFormatException();
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--warm-up must be a number of rounds (0-100), got '" + value
                            + "'");
                }
            } else {
                rest.add(arg);
            }
        }
        return new Parsed(rounds, rest.toArray(String[]::new));
    }

    private final HttpClient http;
    private final String apiKey;

    /**
     * @param apiKey the key the gateways take, or null for an open gateway
     */
    public StackWarmUp(String apiKey) {
        this.apiKey = apiKey;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
    }

    /**
     * Warms {@code stack}: {@code rounds} rounds through each of its gateways, each with as many concurrent streaming
     * requests as the stack has instances of its most numerous worker role, and at least {@value #MIN_CONCURRENT}.
     */
    public static Result warm(LocalStack stack, int rounds, java.util.function.BooleanSupplier stopping) {
        return warm(stack, rounds, stopping, answered -> { });
    }

    /** As {@link #warm(LocalStack, int, BooleanSupplier)}, telling {@code progress} the requests done after each round. */
    public static Result warm(LocalStack stack, int rounds, BooleanSupplier stopping, IntConsumer progress) {
        List<URI> gateways = stack.instances().stream().filter(i -> i.role() == Role.GATEWAY)
                .map(i -> URI.create(i.url())).toList();
        return new StackWarmUp(stack.apiKey()).run(gateways, rounds, spread(stack), DEFAULT_BUDGET, stopping,
                progress);
    }

    /** Requests one round sends through each gateway: the concurrent streaming completions, then two more. */
    static int requestsPerRound(LocalStack stack) {
        return spread(stack) + 2;
    }

    /** Concurrent streaming completions per round: the most numerous worker role's instances, at least 4. */
    private static int spread(LocalStack stack) {
        int spread = MIN_CONCURRENT;
        for (Role role : Role.values()) {
            if (role != Role.GATEWAY) {
                spread = (int) Math.max(spread, stack.instances().stream().filter(i -> i.role() == role).count());
            }
        }
        return spread;
    }

    /**
     * Runs the warm-up through {@code gateways}, starting no round after {@code budget} (the first always runs);
     * returns once every request sent was answered (or failed).
     */
    public Result run(List<URI> gateways, int rounds, int spread, Duration budget) {
        return run(gateways, rounds, spread, budget, () -> false);
    }

    /** As {@link #run(List, int, int, Duration)}, starting no round once {@code stopping} says the stack stops. */
    public Result run(List<URI> gateways, int rounds, int spread, Duration budget, BooleanSupplier stopping) {
        return run(gateways, rounds, spread, budget, stopping, done -> { });
    }

    /** As {@link #run(List, int, int, Duration, BooleanSupplier)}, telling {@code progress} the requests done so far. */
    public Result run(List<URI> gateways, int rounds, int spread, Duration budget, BooleanSupplier stopping,
                      IntConsumer progress) {
        List<String> failures = new ArrayList<>();
        int answered = 0;
        long start = System.nanoTime();
        int done = rounds;
        for (URI gateway : gateways) {
            String model;
            try {
                model = modelOf(gateway);
            } catch (IOException | RuntimeException e) {
                failures.add(gateway + " GET /v1/models: " + e.getMessage());
                continue;
            }
            for (int round = 0; round < rounds; round++) {
                if (stopping.getAsBoolean() || round > 0 && System.nanoTime() - start >= budget.toNanos()) {
                    done = Math.min(done, round);
                    break;
                }
                String prompt = PROMPTS[round % PROMPTS.length];
                List<HttpRequest> requests = new ArrayList<>();
                for (int i = 0; i < spread; i++) {
                    requests.add(post(gateway, "/v1/completions", completion(model, prompt, true)));
                }
                requests.add(post(gateway, "/v1/completions", completion(model, prompt, false)));
                requests.add(post(gateway, "/v1/chat/completions", chat(model, prompt)));
                try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                    List<Future<String>> sent = new ArrayList<>();
                    for (HttpRequest request : requests.subList(0, spread)) {
                        sent.add(pool.submit(() -> answer(request)));
                    }
                    List<String> outcomes = new ArrayList<>();
                    for (Future<String> f : sent) {
                        outcomes.add(join(f));
                    }
                    for (HttpRequest request : requests.subList(spread, requests.size())) {
                        outcomes.add(answer(request));
                    }
                    for (String outcome : outcomes) {
                        if (outcome == null) {
                            answered++;
                        } else {
                            failures.add(outcome);
                        }
                    }
                }
                progress.accept(answered + failures.size());
            }
        }
        return new Result(answered, failures, done);
    }

    private String modelOf(URI gateway) throws IOException {
        HttpRequest request = authorized(HttpRequest.newBuilder(gateway.resolve("/v1/models")))
                .timeout(Duration.ofSeconds(30)).GET().build();
        HttpResponse<String> response = send(request, HttpResponse.BodyHandlers.ofString());
        Matcher m = MODEL_ID.matcher(response.body());
        if (response.statusCode() != 200 || !m.find()) {
            throw new IOException("answered " + response.statusCode() + ": " + response.body());
        }
        return m.group(1);
    }

    /** Sends {@code request} and reads the answer to its end; null if it was a 200, else what went wrong. */
    private String answer(HttpRequest request) {
        try {
            HttpResponse<InputStream> response = send(request, HttpResponse.BodyHandlers.ofInputStream());
            byte[] body;
            try (InputStream in = response.body()) {
                body = in.readAllBytes();
            }
            if (response.statusCode() != 200) {
                return request.method() + " " + request.uri() + " answered " + response.statusCode() + ": "
                        + new String(body, java.nio.charset.StandardCharsets.UTF_8);
            }
            return null;
        } catch (IOException | RuntimeException e) {
            return request.method() + " " + request.uri() + ": " + e;
        }
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) throws IOException {
        try {
            return http.send(request, handler);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    private static String join(Future<String> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().toString();
        }
    }

    private HttpRequest post(URI gateway, String path, String json) {
        return authorized(HttpRequest.newBuilder(gateway.resolve(path)))
                .timeout(Duration.ofMinutes(2))
                .header("Content-Type", "application/json")
                .header(WARM_UP_HEADER, "1")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build();
    }

    private HttpRequest.Builder authorized(HttpRequest.Builder request) {
        return apiKey == null ? request : request.header("Authorization", "Bearer " + apiKey);
    }

    static String completion(String model, String prompt, boolean stream) {
        return "{\"model\":" + quote(model) + ",\"prompt\":" + quote(prompt) + ",\"max_tokens\":8,\"temperature\":0"
                + (stream ? ",\"stream\":true" : "") + "}";
    }

    static String chat(String model, String prompt) {
        return "{\"model\":" + quote(model) + ",\"messages\":[{\"role\":\"user\",\"content\":" + quote(prompt)
                + "}],\"max_tokens\":8,\"temperature\":0,\"stream\":true}";
    }
}
