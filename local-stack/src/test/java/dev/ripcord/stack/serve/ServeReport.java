package dev.ripcord.stack.serve;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

import dev.ripcord.stack.serve.ServeBench.Endpoint;

import tools.jackson.databind.node.ObjectNode;

/**
 * What {@code ./ripcord bench serve} prints: a header naming the machine, the date and the load; a table of every
 * target's figures per level; a ratio table against the first target; or, with {@code --json}, one JSON object per
 * target and level on a line of its own.
 */
final class ServeReport {

    /** The machine the figures come from: the CPU model, the cores this JVM sees, the date, the load average. */
    record Machine(String cpu, int cores, ZonedDateTime date, String loadAtStart) {

        static Machine now() {
            return new Machine(cpuModel(), Runtime.getRuntime().availableProcessors(),
                    ZonedDateTime.now(ZoneOffset.UTC), loadAverage());
        }

        /** The first {@code model name} of {@code /proc/cpuinfo}, or "unknown CPU". */
        static String cpuModel() {
            try {
                return Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                        .filter(line -> line.startsWith("model name"))
                        .map(line -> line.substring(line.indexOf(':') + 1).strip())
                        .findFirst().orElse("unknown CPU");
            } catch (IOException | RuntimeException e) {
                return "unknown CPU";
            }
        }

        /** The 1-minute load average of {@code /proc/loadavg}, or "unknown". */
        static String loadAverage() {
            try {
                return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
            } catch (IOException | RuntimeException e) {
                return "unknown";
            }
        }

        /** The date and time of day, in UTC, as the header prints them. */
        String when() {
            return date.format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'"));
        }
    }

    private final ServeOptions options;
    private final List<Endpoint> endpoints;
    private final Machine machine;

    ServeReport(ServeOptions options, List<Endpoint> endpoints, Machine machine) {
        this.options = options;
        this.endpoints = List.copyOf(endpoints);
        this.machine = machine;
    }

    void header(PrintStream out) {
        out.printf("serve bench, %s; CPU: %s, %d cores; load average %s at the start%n", machine.when(),
                machine.cpu(), machine.cores(), machine.loadAtStart());
        out.printf("targets: %s%n", endpoints.stream()
                .map(e -> e.name() + " = " + e.url() + " (model " + e.model() + ", tokens from "
                        + (e.usage() ? "usage" : "text events") + ")")
                .collect(Collectors.joining("; ")));
        out.printf("load: concurrency %s; requests per level %s; prompts of %s words; max_tokens %d, temperature 0, "
                        + "ignore_eos, streamed; %s; seed %d; %d round(s), targets taking turns at each level%n%n",
                options.concurrency().stream().map(String::valueOf).collect(Collectors.joining(",")),
                options.requests() == null ? "max(20, 5 x concurrency)" : String.valueOf(options.requests()),
                words(), options.maxTokens(), leave(), options.seed(), options.rounds());
    }

    /** The table of every target per level, the failures by kind, then the ratios to the first target. */
    void tables(PrintStream out, List<LevelFigures> figures) {
        out.println("| target | concurrency | requests | completed | failed | left | output tok/s | TTFT p50 | TTFT p99"
                + " | ITL p50 | ITL p99 | e2e p50 |");
        out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (LevelFigures f : figures) {
            out.printf("| %s | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s |%n", f.target(), f.concurrency(),
                    f.requests(), f.completed(), f.failed(), f.left(), number(f.tokensPerSecond()), ms(f.ttftP50()),
                    ms(f.ttftP99()), ms(f.itlP50()), ms(f.itlP99()), ms(f.e2eP50()));
        }
        List<String> failures = new ArrayList<>();
        for (LevelFigures f : figures) {
            if (!f.failures().isEmpty()) {
                failures.add(f.target() + " at " + f.concurrency() + ": " + f.failures().entrySet().stream()
                        .map(e -> e.getKey() + " x" + e.getValue()).collect(Collectors.joining(", ")));
            }
        }
        out.printf("%nfailures by kind: %s%n", failures.isEmpty() ? "none" : String.join("; ", failures));
        if (endpoints.size() < 2) {
            return;
        }
        String base = endpoints.getFirst().name();
        StringBuilder head = new StringBuilder("| concurrency (requests) |");
        StringBuilder rule = new StringBuilder("|---|");
        for (Endpoint e : endpoints) {
            head.append(' ').append(e.name()).append(": tok/s, TTFT p50, ITL p99, failures |");
            rule.append("---|");
        }
        for (Endpoint e : endpoints.subList(1, endpoints.size())) {
            head.append(' ').append(e.name()).append(" / ").append(base).append(": tok/s, TTFT p50, ITL p99 |");
            rule.append("---|");
        }
        out.println();
        out.println(head);
        out.println(rule);
        for (int concurrency : options.concurrency()) {
            Map<String, LevelFigures> level = figures.stream().filter(f -> f.concurrency() == concurrency)
                    .collect(Collectors.toMap(LevelFigures::target, f -> f));
            LevelFigures first = level.get(base);
            StringBuilder row = new StringBuilder("| ").append(concurrency).append(" (")
                    .append(options.requestsAt(concurrency))
                    .append(options.rounds() > 1 ? " x " + options.rounds() + " rounds" : "").append(") |");
            for (Endpoint e : endpoints) {
                LevelFigures f = level.get(e.name());
                row.append(' ').append(number(f.tokensPerSecond())).append(", ").append(ms(f.ttftP50()))
                        .append(", ").append(ms(f.itlP99())).append(", ").append(f.failed()).append(" |");
            }
            for (Endpoint e : endpoints.subList(1, endpoints.size())) {
                LevelFigures f = level.get(e.name());
                row.append(' ').append(ratio(Stats.ratio(f.tokensPerSecond(), first.tokensPerSecond())))
                        .append(", ").append(ratio(Stats.ratio(f.ttftP50(), first.ttftP50())))
                        .append(", ").append(ratio(Stats.ratio(f.itlP99(), first.itlP99()))).append(" |");
            }
            out.println(row);
        }
    }

    /** One JSON object per target and level, each on a line of its own. */
    void json(PrintStream out, List<LevelFigures> figures) {
        for (LevelFigures f : figures) {
            Endpoint e = endpoints.stream().filter(x -> x.name().equals(f.target())).findFirst().orElseThrow();
            ObjectNode line = ServeBench.JSON.createObjectNode();
            line.put("target", f.target());
            line.put("url", e.url().toString());
            line.put("model", e.model());
            line.put("tokens_from", e.usage() ? "usage" : "text_events");
            line.put("concurrency", f.concurrency());
            line.put("rounds", f.rounds());
            line.put("requests", f.requests());
            line.put("completed", f.completed());
            line.put("failed", f.failed());
            ObjectNode failures = line.putObject("failures");
            f.failures().forEach(failures::put);
            line.put("left", f.left());
            line.put("output_tokens", f.tokens());
            put(line, "output_tokens_per_s", f.tokensPerSecond());
            put(line, "ttft_p50_ms", f.ttftP50());
            put(line, "ttft_p99_ms", f.ttftP99());
            put(line, "itl_p50_ms", f.itlP50());
            put(line, "itl_p99_ms", f.itlP99());
            put(line, "e2e_p50_ms", f.e2eP50());
            line.put("max_tokens", options.maxTokens());
            line.put("prompt_words", words());
            line.put("leave_share", options.leaveShare());
            line.put("leave_after_ms", options.leaveAfter().toNanos() / 1e6);
            line.put("seed", options.seed());
            line.put("cpu", machine.cpu());
            line.put("cores", machine.cores());
            line.put("date", machine.date().truncatedTo(ChronoUnit.SECONDS).toString());
            line.put("load_at_start", machine.loadAtStart());
            out.println(ServeBench.JSON.writeValueAsString(line));
        }
    }

    private static void put(ObjectNode node, String field, double value) {
        if (Double.isNaN(value)) {
            node.putNull(field);
        } else {
            node.put(field, Math.round(value * 1000) / 1000.0);
        }
    }

    private String words() {
        ServeOptions.PromptWords w = options.promptWords();
        return w.min() == w.max() ? String.valueOf(w.min()) : w.min() + "-" + w.max();
    }

    private String leave() {
        return options.leaveShare() == 0 ? "no client leaves"
                : String.format(Locale.ROOT, "%s%% of each level's requests leave %s ms after sending",
                compact(options.leaveShare() * 100), compact(options.leaveAfter().toNanos() / 1e6));
    }

    static String number(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.1f", value);
    }

    /** {@code value} to three decimals, without a fraction when it has none. */
    private static String compact(double value) {
        double rounded = Math.round(value * 1000) / 1000.0;
        return rounded == Math.rint(rounded) ? String.valueOf((long) rounded) : String.valueOf(rounded);
    }

    static String ms(double value) {
        if (Double.isNaN(value)) {
            return "-";
        }
        return String.format(Locale.ROOT, value < 10 ? "%.2f ms" : value < 1000 ? "%.1f ms" : "%.0f ms", value);
    }

    static String ratio(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2fx", value);
    }
}
