package dev.ripcord.cli.audit;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.audit.AuditReport;
import dev.ripcord.lifecycle.audit.AuditReportJson;
import dev.ripcord.lifecycle.audit.Auditor;
import dev.ripcord.lifecycle.audit.EventLoss;
import dev.ripcord.lifecycle.audit.LatencyStats;
import dev.ripcord.lifecycle.audit.Violation;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ripcord audit}: reads the lifecycle log and the cancellations topic for a time range (or a saved dump),
 * checks the cancellation invariants with {@link Auditor}, and prints what it found. Exit status: 0 every invariant
 * held, 1 at least one violation or a window without evidence to judge, 2 a usage error or nothing could be read.
 * Corrupt or foreign records are reported and skipped. See docs/operations.md ("Auditing cancellations").
 */
@Command(name = "audit", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Checks the lifecycle log's invariants over a time range or a saved dump:",
        "one terminal outcome per request; at most one abort per worker and none after a normal finish;",
        "no prefill chunk and no decode token after the cancel was observed; every KV session released",
        "exactly once and after it drained; every page reserved freed.",
        "Exit status: 0 all held, 1 a violation or a window without evidence, 2 usage error or unreadable input."})
public final class AuditCommand implements Callable<Integer> {

  /** The local stack's embedded broker ({@code ./ripcord up}, docs/getting-started.md), unless RIPCORD_KAFKA says. */
  static final String DEFAULT_KAFKA = "localhost:9092";

  @Spec CommandSpec spec;

  @Option(names = "--since", paramLabel = "DURATION",
      description = "audit the last DURATION (e.g. 10m, 1h, 2d, PT30M); default 1h unless --from or --dump")
  String since;

  @Option(names = "--from", paramLabel = "INSTANT", description = "start of the range (ISO-8601, e.g. 2026-12-01T12:00:00Z)")
  String from;

  @Option(names = "--to", paramLabel = "INSTANT", description = "end of the range (ISO-8601); default now")
  String to;

  @Option(names = "--dump", paramLabel = "FILE", description = "audit a saved dump instead of reading Kafka")
  Path dump;

  @Option(names = "--save", paramLabel = "FILE", description = "also write what was read to FILE (a dump for --dump)")
  Path save;

  @Option(names = "--request", paramLabel = "ID", description = "print this request's timeline and its violations")
  String request;

  @Option(names = "--json", description = "print the report as JSON")
  boolean json;

  @Option(names = "--kafka", paramLabel = "HOST:PORT",
      description = "bootstrap servers; default $RIPCORD_KAFKA, else the local stack's " + DEFAULT_KAFKA)
  String kafka;

  @Option(names = "--kafka-property", paramLabel = "KEY=VALUE",
      description = "a Kafka client setting (security.protocol, sasl.*, ssl.*: as the services take them); repeatable")
  Map<String, String> kafkaProperties = new LinkedHashMap<>();

  @Option(names = "--kafka-properties", paramLabel = "FILE", description = "Kafka client settings from a properties file")
  Path kafkaPropertiesFile;

  @Option(names = "--lifecycle-topic", paramLabel = "TOPIC", defaultValue = "ripcord.lifecycle",
      description = "the lifecycle topic (default: ${DEFAULT-VALUE})")
  String lifecycleTopic;

  @Option(names = "--cancel-topic", paramLabel = "TOPIC", defaultValue = "ripcord.cancellations",
      description = "the cancellations topic (default: ${DEFAULT-VALUE})")
  String cancelTopic;

  @Option(names = "--in-flight-grace", paramLabel = "DURATION", defaultValue = "30s",
      description = "a request whose events reach within this of an edge of the range is in flight, not judged "
          + "for missing events (default: ${DEFAULT-VALUE})")
  String inFlightGrace;

  @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "15s",
      description = "how long to wait for the broker (default: ${DEFAULT-VALUE})")
  String timeout;

  private final Clock clock;

  public AuditCommand() {
    this(Clock.systemUTC());
  }

  AuditCommand(Clock clock) {
    this.clock = clock;
  }

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      return run(out, err);
    } finally {
      out.flush();
      err.flush();
    }
  }

  private int run(PrintWriter out, PrintWriter err) {
    Instant start;
    Instant end;
    Duration grace;
    try {
      grace = duration(inFlightGrace, "--in-flight-grace");
      Instant now = clock.instant();
      end = to == null ? (dump == null ? now : null) : instant(to, "--to");
      if (since != null && from != null) {
        throw usage("give --since or --from, not both");
      }
      if (since != null) {
        start = (end == null ? now : end).minus(duration(since, "--since"));
      } else if (from != null) {
        start = instant(from, "--from");
      } else {
        start = dump == null ? (end == null ? now : end).minus(Duration.ofHours(1)) : null;
      }
      if (start != null && end != null && start.isAfter(end)) {
        throw usage("the range is empty: %s is after %s".formatted(start, end));
      }
    } catch (ParameterException e) {
      err.println("ripcord audit: " + e.getMessage());
      spec.commandLine().usage(err);
      return 2;
    }

    AuditInput input;
    try {
      input = dump != null ? DumpFile.read(dump) : readKafka(start, end, err);
    } catch (IOException e) {
      err.println("ripcord audit: cannot read " + dump + ": " + e.getMessage());
      return 2;
    } catch (RuntimeException e) {
      err.println("ripcord audit: cannot read the topics from " + bootstrap() + ": " + e.getMessage());
      return 2;
    }
    if (input == null) {
      return 2;
    }
    if (save != null) {
      try {
        DumpFile.write(save, input);
      } catch (IOException e) {
        err.println("ripcord audit: cannot write " + save + ": " + e.getMessage());
        return 2;
      }
    }
    if (dump != null) {
      // A dump's range is what it holds, narrowed by --from/--to/--since if given.
      input.events.removeIf(e -> outside(e.timestamp(), start, end));
      input.cancels.removeIf(c -> outside(c.timestamp(), start, end));
    }
    AuditReport report = Auditor.audit(input.events, input.cancels, new Auditor.Options(start, end, grace));
    if (request != null) {
      return timeline(out, input, report);
    }
    if (json) {
      ObjectNode node = AuditReportJson.toJson(report);
      ArrayNode skipped = node.putArray("skipped");
      input.skipped.forEach(skipped::add);
      out.println(JsonMapper.builder().build().writerWithDefaultPrettyPrinter().writeValueAsString(node));
    } else {
      print(out, report, input.skipped);
    }
    return report.passed() ? 0 : 1;
  }

  private AuditInput readKafka(Instant start, Instant end, PrintWriter err) {
    Map<String, String> client = new LinkedHashMap<>();
    if (kafkaPropertiesFile != null) {
      Properties file = new Properties();
      try (InputStream in = Files.newInputStream(kafkaPropertiesFile)) {
        file.load(in);
      } catch (IOException e) {
        err.println("ripcord audit: cannot read " + kafkaPropertiesFile + ": " + e.getMessage());
        return null;
      }
      file.stringPropertyNames().forEach(k -> client.put(k, file.getProperty(k)));
    }
    client.putAll(kafkaProperties);
    AuditInput input = new AuditInput();
    List<String> missing = new ArrayList<>();
    new KafkaSource(bootstrap(), client, duration(timeout, "--timeout"))
        .read(lifecycleTopic, cancelTopic, start, end, input, missing);
    if (missing.contains(lifecycleTopic)) {
      err.println("ripcord audit: " + bootstrap() + " has no topic " + lifecycleTopic
          + " (no service has published a lifecycle event there: is ripcord.lifecycle.enabled off?)");
      return null;
    }
    if (!missing.isEmpty()) {
      err.println("ripcord audit: " + bootstrap() + " has no topic " + String.join(", ", missing)
          + "; auditing without cancel events");
    }
    return input;
  }

  private String bootstrap() {
    if (kafka != null) {
      return kafka;
    }
    String env = System.getenv("RIPCORD_KAFKA");
    return env == null || env.isBlank() ? DEFAULT_KAFKA : env;
  }

  // ------------------------------------------------------------------------------------------ output

  private static void print(PrintWriter out, AuditReport r, List<String> skipped) {
    out.printf("audit %s .. %s: %d events, %d requests %s, %d in flight%n", r.from(), r.to(), r.events(),
        r.requests(), r.outcomes(), r.inFlight());
    out.printf("cancels: %d %s%n", r.cancels(), r.cancelsByReason());
    out.printf("aborts by phase: %s%n", r.abortsByPhase());
    if (!r.latencies().isEmpty()) {
      out.println("cancel -> abort latency per hop:");
      r.latencies().forEach((hop, s) -> out.printf("  %-28s n=%-6d p50=%s p99=%s max=%s%n", hop, s.count(),
          ms(s.p50()), ms(s.p99()), ms(s.max())));
    }
    out.printf("wasted prefill tokens: %d (%d after prefill observed the cancel)%n", r.wastedPrefillTokens(),
        r.tokensAfterCancel());
    if (!skipped.isEmpty()) {
      out.printf("skipped %d unreadable record(s):%n", skipped.size());
      skipped.forEach(s -> out.println("  " + s));
    }
    for (EventLoss loss : r.losses()) {
      out.println("lost: " + loss);
    }
    for (Violation v : r.unverifiable()) {
      out.printf("unverifiable %s %s: %s%n", v.invariant(), v.requestId(), v.message());
    }
    for (Violation v : r.violations()) {
      printViolation(out, v);
    }
    for (String error : r.errors()) {
      out.println("ERROR: " + error);
    }
    out.println(r.passed() ? "OK: every invariant held" : "FAILED: " + r.violations().size() + " violation(s)"
        + (r.errors().isEmpty() ? "" : ", " + r.errors().size() + " error(s)"));
  }

  private static void printViolation(PrintWriter out, Violation v) {
    out.printf("VIOLATION %s requestId=%s: %s%n", v.invariant(), v.requestId(), v.message());
    for (LifecycleEvent e : v.events()) {
      out.println("    " + e);
    }
  }

  private int timeline(PrintWriter out, AuditInput input, AuditReport report) {
    // The ID a person asks about is usually the client's X-Request-Id: events and cancels name the internal IDs
    // minted for it (and their choices), every use of it included.
    List<LifecycleEvent> events = Auditor.timeline(input.events, id -> RequestIds.names(request, id));
    List<CancelEvent> cancels = input.cancels.stream().filter(c -> RequestIds.names(request, c.requestId())).toList();
    List<Violation> violations = report.violations().stream()
        .filter(v -> RequestIds.names(request, v.requestId())).toList();
    if (json) {
      JsonMapper mapper = JsonMapper.builder().build();
      ObjectNode node = mapper.createObjectNode();
      node.put("requestId", request);
      ArrayNode evs = node.putArray("events");
      events.forEach(e -> evs.add(dev.ripcord.lifecycle.LifecycleEventCodec.toJson(e)));
      ArrayNode cs = node.putArray("cancels");
      cancels.forEach(c -> cs.add(mapper.readTree(dev.ripcord.cancel.CancelEventCodec.encode(c))));
      ObjectNode whole = AuditReportJson.toJson(report);
      ArrayNode vs = node.putArray("violations");
      whole.get("violations").forEach(v -> {
        if (RequestIds.names(request, v.get("requestId").asString())) {
          vs.add(v);
        }
      });
      out.println(mapper.writerWithDefaultPrettyPrinter().writeValueAsString(node));
    } else {
      out.printf("requestId=%s: %d lifecycle event(s), %d cancel event(s)%n", request, events.size(),
          cancels.size());
      for (CancelEvent c : cancels) {
        out.printf("  %s cancel published by %s/%s: %s%n", c.timestamp(), c.origin().service(),
            c.origin().instance(), c.reason());
      }
      for (LifecycleEvent e : events) {
        out.println("  " + e);
      }
      violations.forEach(v -> printViolation(out, v));
    }
    if (events.isEmpty() && cancels.isEmpty()) {
      return 1;
    }
    return violations.isEmpty() ? 0 : 1;
  }

  private static String ms(Duration d) {
    return String.format(Locale.ROOT, "%.1fms", d.toNanos() / 1_000_000.0);
  }

  // ------------------------------------------------------------------------------------------ parsing

  private static final Pattern SHORT_DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

  private ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  private Duration duration(String value, String option) {
    Matcher m = SHORT_DURATION.matcher(value.trim().toLowerCase(Locale.ROOT));
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    try {
      Duration d = Duration.parse(value.trim());
      if (!d.isNegative()) {
        return d;
      }
    } catch (DateTimeParseException e) {
      // fall through
    }
    throw usage("%s: '%s' is not a duration (e.g. 30s, 10m, 1h, 2d, PT30M)".formatted(option, value));
  }

  private Instant instant(String value, String option) {
    try {
      return Instant.parse(value.trim());
    } catch (DateTimeParseException e) {
      throw usage("%s: '%s' is not an ISO-8601 instant (e.g. 2026-12-01T12:00:00Z)".formatted(option, value));
    }
  }

  private static boolean outside(Instant t, Instant start, Instant end) {
    return (start != null && t.isBefore(start)) || (end != null && t.isAfter(end));
  }
}
