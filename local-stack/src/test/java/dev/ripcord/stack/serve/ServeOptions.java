package dev.ripcord.stack.serve;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.stack.bench.BenchUsage;

/**
 * The command line of {@code ./ripcord bench serve}, parsed and checked: every mistake is a {@link UsageException}
 * whose message is one line naming the option.
 *
 * @param targets       the servers, in the order they run within a level (the first is the ratios' denominator)
 * @param apiKeys       a key per target name, where one was given with {@code --api-key=NAME=KEY}
 * @param apiKey        the key of every other target: {@code --api-key=KEY}, else {@code RIPCORD_API_KEY}, else null
 * @param models        a model per target name ({@code --model=NAME=MODEL})
 * @param model         the model of every other target, or null: the first of its {@code GET /v1/models}
 * @param concurrency   the levels, one phase each, in order
 * @param requests      requests per level, or null for {@link #requestsAt(int) the default}
 * @param promptWords   shortest and longest prompt, in words (a word of the prompt vocabulary is about one token)
 * @param maxTokens     {@code max_tokens} of every request
 * @param leaveShare    share of each level's requests whose client disconnects {@code leaveAfter} after sending
 * @param leaveAfter    how long after sending a leaving client closes its connection
 * @param seed          seed of the prompts and of who leaves
 * @param rounds        how many times the whole sweep of levels runs
 * @param timeout       longest a request may take before the client gives up (a "timeout" failure)
 * @param pause         idle time between two phases, so that a server can finish what the last phase left it
 * @param warmUp        warm-up requests per target before the first phase
 * @param json          print one JSON object per target and level instead of the tables
 * @param multiTurn     the multi-turn scenario ({@code --scenario=multi-turn}), or null for the single-prompt load
 * @param cancelRetry   the cancel-then-retry scenario ({@code --scenario=cancel-retry}), or null
 * @param prefillMetrics per target, the actuator base URLs of its prefill workers, whose prefix-cache counters the
 *                      multi-turn scenario reads before and after each phase ({@code --prefill-metrics=NAME=URL,URL};
 *                      a target resolved from {@code .ripcord/stack.json} gets the stack's prefill workers)
 */
public record ServeOptions(List<Target> targets, Map<String, String> apiKeys, String apiKey,
                           Map<String, String> models, String model, List<Integer> concurrency, Integer requests,
                           PromptWords promptWords, int maxTokens, double leaveShare, Duration leaveAfter, long seed,
                           int rounds, Duration timeout, Duration pause, int warmUp, boolean json,
                           MultiTurn multiTurn, CancelRetry cancelRetry, Map<String, List<URI>> prefillMetrics) {

    /**
     * The multi-turn scenario: {@code conversations} conversations of {@code turns} turns each over one shared system
     * prompt of about {@code systemTokens} tokens, each user turn about {@code turnTokens} tokens, every turn resending
     * the whole history (the system prompt, every earlier user turn and answer) as a chat client does.
     */
    public record MultiTurn(int conversations, int turns, int systemTokens, int turnTokens) {
    }

    /**
     * The cancel-then-retry scenario: per round, a prompt of about {@code promptTokens} tokens is sent cold, then again
     * under another {@code cache_salt} and abandoned at {@code cancelAt} of the cold run's time to first token, then
     * retried under that salt; the retry's time to first token and output are compared with the cold run's.
     */
    public record CancelRetry(int promptTokens, double cancelAt) {
    }

    static final String USAGE = BenchUsage.read(ServeBench.class);

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]+");
    private static final Pattern RANGE = Pattern.compile("(\\d+)(?:-(\\d+))?");
    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s)");
    private static final Pattern STATE_GATEWAY =
            Pattern.compile("\"role\"\\s*:\\s*\"gateway\"\\s*,\\s*\"url\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern STATE_PREFILL_METRICS = Pattern.compile("\"role\"\\s*:\\s*\"prefill\"\\s*,"
            + "\\s*\"url\"\\s*:\\s*\"[^\"]+\"\\s*,\\s*\"managementUrl\"\\s*:\\s*\"([^\"]+)\"");

    /** A server to measure; {@code url} is null for the gateway of the stack {@code ./ripcord up} runs. */
    public record Target(String name, URI url) {
    }

    /** Prompt lengths, in words of the prompt vocabulary (about one token each), both ends included. */
    public record PromptWords(int min, int max) {
    }

    /** A bad command line; the message is one line. */
    public static final class UsageException extends IllegalArgumentException {
        public UsageException(String message) {
            super(message);
        }
    }

    /** Thrown by {@link #parse} for {@code --help}. */
    public static final class HelpRequested extends RuntimeException {
        HelpRequested() {
            super("help", null, false, false);
        }
    }

    public ServeOptions {
        targets = List.copyOf(targets);
        apiKeys = Map.copyOf(apiKeys);
        models = Map.copyOf(models);
        concurrency = List.copyOf(concurrency);
        prefillMetrics = Map.copyOf(prefillMetrics);
    }

    /** Requests of the level with {@code c} clients: {@code --requests}, else 5 per client and at least 20. */
    public int requestsAt(int c) {
        return requests != null ? requests : Math.max(20, 5 * c);
    }

    /** The key sent to {@code target}, or null for none. */
    public String apiKeyOf(String target) {
        return apiKeys.getOrDefault(target, apiKey);
    }

    /** The model asked of {@code target}, or null to ask the target's {@code /v1/models}. */
    public String modelOf(String target) {
        return models.getOrDefault(target, model);
    }

    /** Parses {@code args}; {@code env} supplies {@code RIPCORD_API_KEY}. */
    public static ServeOptions parse(String[] args, Map<String, String> env) {
        List<Target> targets = new ArrayList<>();
        Set<String> names = new LinkedHashSet<>();
        List<String> keyArgs = new ArrayList<>();
        List<String> modelArgs = new ArrayList<>();
        List<String> metricsArgs = new ArrayList<>();
        Map<String, String> single = new LinkedHashMap<>();
        boolean json = false;
        for (String arg : args) {
            if (arg.equals("--help") || arg.equals("-h")) {
                throw new HelpRequested();
            }
            if (arg.equals("--json")) {
                json = true;
                continue;
            }
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                throw new UsageException("unexpected argument '" + arg
                        + "' (options are --name=value; --help lists them)");
            }
            String key = arg.substring(2, eq);
            String value = arg.substring(eq + 1);
            switch (key) {
                case "target" -> {
                    Target target = target(value);
                    if (!names.add(target.name())) {
                        throw new UsageException("--target: the name '" + target.name() + "' is given twice");
                    }
                    targets.add(target);
                }
                case "api-key" -> keyArgs.add(value);
                case "model" -> modelArgs.add(value);
                case "prefill-metrics" -> metricsArgs.add(value);
                case "concurrency", "requests", "prompt-tokens", "max-tokens", "leave", "seed", "rounds", "timeout",
                     "pause", "warm-up", "scenario", "conversations", "turns", "system-tokens", "turn-tokens",
                     "retry-prompt-tokens", "cancel-at" -> {
                    if (single.put(key, value) != null) {
                        throw new UsageException("--" + key + " is given twice");
                    }
                }
                default -> throw new UsageException("unknown option --" + key + " (--help lists them)");
            }
        }
        if (targets.isEmpty()) {
            throw new UsageException(
                    "no --target: name at least one server, e.g. --target=llama=http://127.0.0.1:18080");
        }
        Map<String, String> apiKeys = new LinkedHashMap<>();
        String apiKey = perTarget("api-key", keyArgs, names, apiKeys);
        if (apiKey == null) {
            String fromEnv = env.get("RIPCORD_API_KEY");
            apiKey = fromEnv == null || fromEnv.isBlank() ? null : fromEnv;
        }
        Map<String, String> models = new LinkedHashMap<>();
        String model = perTarget("model", modelArgs, names, models);

        List<Integer> concurrency = positiveList("concurrency", single.getOrDefault("concurrency", "1,8,32"));
        Integer requests = single.containsKey("requests") ? positive("requests", single.get("requests")) : null;
        PromptWords promptWords = range("prompt-tokens", single.getOrDefault("prompt-tokens", "15-25"));
        int maxTokens = positive("max-tokens", single.getOrDefault("max-tokens", "64"));
        String leave = single.getOrDefault("leave", "0");
        double leaveShare;
        Duration leaveAfter;
        int at = leave.indexOf('@');
        leaveShare = share(leave, at < 0 ? leave : leave.substring(0, at));
        if (at < 0) {
            if (leaveShare > 0) {
                throw new UsageException(
                        "--leave=" + leave + ": say when clients leave, e.g. --leave=" + leave + "@60ms");
            }
            leaveAfter = Duration.ZERO;
        } else {
            leaveAfter = duration("leave", leave.substring(at + 1));
        }
        long seed = longValue("seed", single.getOrDefault("seed", "7"));
        int rounds = positive("rounds", single.getOrDefault("rounds", "1"));
        Duration timeout = duration("timeout", single.getOrDefault("timeout", "300s"));
        if (timeout.isZero()) {
            throw new UsageException("--timeout must be more than 0");
        }
        Duration pause = duration("pause", single.getOrDefault("pause", "1s"));
        int warmUp = positive("warm-up", single.getOrDefault("warm-up", "2"));
        String scenario = single.getOrDefault("scenario", "single");
        MultiTurn multiTurn = null;
        if (scenario.equals("multi-turn")) {
            multiTurn = new MultiTurn(positive("conversations", single.getOrDefault("conversations", "2")),
                    positive("turns", single.getOrDefault("turns", "8")),
                    positive("system-tokens", single.getOrDefault("system-tokens", "1024")),
                    positive("turn-tokens", single.getOrDefault("turn-tokens", "32")));
        } else if (!scenario.equals("single") && !scenario.equals("cancel-retry")) {
            throw new UsageException("--scenario=" + scenario + ": expected single, multi-turn or cancel-retry");
        } else {
            for (String option : List.of("conversations", "turns", "system-tokens", "turn-tokens")) {
                if (single.containsKey(option)) {
                    throw new UsageException("--" + option + " belongs to --scenario=multi-turn");
                }
            }
        }
        CancelRetry cancelRetry = null;
        if (scenario.equals("cancel-retry")) {
            String value = single.getOrDefault("cancel-at", "0.6");
            double cancelAt;
            try {
                cancelAt = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                cancelAt = Double.NaN;
            }
            if (!(cancelAt > 0 && cancelAt < 1)) {
                throw new UsageException("--cancel-at=" + value
                        + ": expected a share of the cold run's time to first token, above 0 and below 1");
            }
            cancelRetry = new CancelRetry(positive("retry-prompt-tokens",
                    single.getOrDefault("retry-prompt-tokens", "2048")), cancelAt);
        } else {
            for (String option : List.of("retry-prompt-tokens", "cancel-at")) {
                if (single.containsKey(option)) {
                    throw new UsageException("--" + option + " belongs to --scenario=cancel-retry");
                }
            }
        }
        Map<String, List<URI>> prefillMetrics = new LinkedHashMap<>();
        for (String value : metricsArgs) {
            int eq = value.indexOf('=');
            String name = eq > 0 ? value.substring(0, eq) : null;
            if (name == null || !names.contains(name)) {
                throw new UsageException("--prefill-metrics=" + value + ": expected NAME=URL[,URL...] naming a --target");
            }
            List<URI> urls = new ArrayList<>();
            for (String url : value.substring(eq + 1).split(",")) {
                urls.add(baseUrl("prefill-metrics=" + value, url.strip(),
                        "the prefix-cache counters are read at /actuator/prometheus"));
            }
            if (prefillMetrics.put(name, List.copyOf(urls)) != null) {
                throw new UsageException("--prefill-metrics for target '" + name + "' is given twice");
            }
        }
        return new ServeOptions(targets, apiKeys, apiKey, models, model, concurrency, requests, promptWords,
                maxTokens, leaveShare, leaveAfter, seed, rounds, timeout, pause, warmUp, json, multiTurn, cancelRetry,
                prefillMetrics);
    }

    /**
     * These options with every target that has no URL given the gateway of the stack {@code ./ripcord up} runs:
     * the {@code gateway} instance of {@code .ripcord/stack.json} in {@code dir} or the closest directory above it.
     */
    public ServeOptions resolve(Path dir) {
        if (targets.stream().allMatch(t -> t.url() != null)) {
            return this;
        }
        Optional<URI> gateway = localStackGateway(dir);
        List<Target> resolved = new ArrayList<>();
        Map<String, List<URI>> metrics = new LinkedHashMap<>(prefillMetrics);
        for (Target t : targets) {
            if (t.url() == null && !metrics.containsKey(t.name())) {
                List<URI> prefills = localStackPrefillMetrics(dir);
                if (!prefills.isEmpty()) {
                    metrics.put(t.name(), prefills);
                }
            }
            if (t.url() == null && gateway.isEmpty()) {
                throw new UsageException("--target=" + t.name() + " has no URL and there is no .ripcord/stack.json with"
                        + " a gateway in " + dir + " or above (is ./ripcord up running? else give --target="
                        + t.name() + "=URL)");
            }
            resolved.add(t.url() != null ? t : new Target(t.name(), gateway.orElseThrow()));
        }
        return new ServeOptions(resolved, apiKeys, apiKey, models, model, concurrency, requests, promptWords,
                maxTokens, leaveShare, leaveAfter, seed, rounds, timeout, pause, warmUp, json, multiTurn, cancelRetry,
                metrics);
    }

    /** The actuator base URLs of the prefill workers of {@code .ripcord/stack.json}, as {@link #localStackGateway}. */
    static List<URI> localStackPrefillMetrics(Path dir) {
        for (Path d = dir.toAbsolutePath(); d != null; d = d.getParent()) {
            Path state = d.resolve(".ripcord").resolve("stack.json");
            if (Files.isRegularFile(state)) {
                try {
                    Matcher m = STATE_PREFILL_METRICS.matcher(Files.readString(state, StandardCharsets.UTF_8));
                    List<URI> urls = new ArrayList<>();
                    while (m.find()) {
                        urls.add(URI.create(m.group(1)));
                    }
                    return urls;
                } catch (IOException | IllegalArgumentException e) {
                    return List.of();
                }
            }
        }
        return List.of();
    }

    /** The first gateway URL of {@code .ripcord/stack.json} in {@code dir} or the closest directory above it. */
    static Optional<URI> localStackGateway(Path dir) {
        for (Path d = dir.toAbsolutePath(); d != null; d = d.getParent()) {
            Path state = d.resolve(".ripcord").resolve("stack.json");
            if (Files.isRegularFile(state)) {
                try {
                    Matcher m = STATE_GATEWAY.matcher(Files.readString(state, StandardCharsets.UTF_8));
                    return m.find() ? Optional.of(URI.create(m.group(1))) : Optional.empty();
                } catch (IOException | IllegalArgumentException e) {
                    return Optional.empty();
                }
            }
        }
        return Optional.empty();
    }

    private static Target target(String value) {
        int eq = value.indexOf('=');
        String name;
        String url;
        if (eq >= 0) {
            name = value.substring(0, eq);
            url = value.substring(eq + 1);
        } else if (value.contains("://")) {
            url = value;
            name = null;
        } else {
            name = value;
            url = null;
        }
        URI uri = url == null ? null : baseUrl("target=" + value, url, "requests go to /v1/completions");
        if (name == null) {
            name = uri.getAuthority();
        }
        if (!NAME.matcher(name).matches()) {
            throw new UsageException("--target=" + value + ": a name is letters, digits, '.', '_', ':' and '-'");
        }
        return new Target(name, uri);
    }

    private static URI baseUrl(String option, String url, String why) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new UsageException("--" + option + ": '" + url + "' is not a URL");
        }
        if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
            throw new UsageException("--" + option + ": '" + url + "' is not an http(s)://host[:port] URL");
        }
        String path = uri.getPath() == null ? "" : uri.getPath();
        if (!path.isEmpty() && !path.equals("/") || uri.getQuery() != null) {
            throw new UsageException("--" + option + ": give the server's base URL without a path"
                    + " (" + why + ")");
        }
        return URI.create(uri.getScheme() + "://" + uri.getAuthority());
    }

    /** {@code NAME=VALUE} arguments into {@code perTarget}; returns the one plain value, or null. */
    private static String perTarget(String option, List<String> values, Set<String> names,
                                    Map<String, String> perTarget) {
        String plain = null;
        for (String value : values) {
            int eq = value.indexOf('=');
            if (eq > 0 && names.contains(value.substring(0, eq))) {
                String name = value.substring(0, eq);
                if (eq == value.length() - 1) {
                    throw new UsageException("--" + option + "=" + value + ": the value for '" + name + "' is empty");
                }
                if (perTarget.put(name, value.substring(eq + 1)) != null) {
                    throw new UsageException("--" + option + " for target '" + name + "' is given twice");
                }
            } else if (value.isEmpty()) {
                throw new UsageException("--" + option + "= is empty");
            } else if (plain != null) {
                throw new UsageException("--" + option + " without a target name is given twice");
            } else {
                plain = value;
            }
        }
        return plain;
    }

    private static List<Integer> positiveList(String option, String value) {
        List<Integer> levels = new ArrayList<>();
        for (String part : value.split(",", -1)) {
            levels.add(positive(option, part.strip(), value));
        }
        return levels;
    }

    private static int positive(String option, String value) {
        return positive(option, value, value);
    }

    private static int positive(String option, String value, String whole) {
        int n = intValue(option, value, whole);
        if (n < 1) {
            throw new UsageException("--" + option + "=" + whole + ": " + n + " is not a positive integer");
        }
        return n;
    }

    private static int intValue(String option, String value, String whole) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + option + "=" + whole + ": '" + value + "' is not an integer");
        }
    }

    private static long longValue(String option, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + option + "=" + value + " is not an integer");
        }
    }

    private static PromptWords range(String option, String value) {
        Matcher m = RANGE.matcher(value);
        if (!m.matches()) {
            throw new UsageException("--" + option + "=" + value + ": expected MIN-MAX or N, e.g. 15-25");
        }
        int min = intValue(option, m.group(1), value);
        int max = m.group(2) == null ? min : intValue(option, m.group(2), value);
        if (min < 1 || max < min) {
            throw new UsageException("--" + option + "=" + value + ": expected 1 <= MIN <= MAX");
        }
        return new PromptWords(min, max);
    }

    private static double share(String whole, String value) {
        double share;
        try {
            share = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new UsageException("--leave=" + whole + ": '" + value + "' is not a share between 0 and 1");
        }
        if (!(share >= 0 && share <= 1)) {
            throw new UsageException("--leave=" + whole + ": the share " + value + " is not between 0 and 1");
        }
        return share;
    }

    private static Duration duration(String option, String value) {
        Matcher m = DURATION.matcher(value);
        if (!m.matches()) {
            throw new UsageException("--" + option + ": '" + value + "' is not a duration such as 60ms or 1.5s");
        }
        double amount = Double.parseDouble(m.group(1));
        double nanos = m.group(2).equals("ms") ? amount * 1e6 : amount * 1e9;
        return Duration.ofNanos(Math.round(nanos));
    }
}
