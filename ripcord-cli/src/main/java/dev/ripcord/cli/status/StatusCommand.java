package dev.ripcord.cli.status;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./ripcord status}: every instance of the running local stack, its URL, its health and its resident memory.
 *
 * <p>Reads the state file {@code ./ripcord up} writes once the stack is healthy ({@code .ripcord/stack.json}, see
 * local-stack's {@code StackStateFile}) and probes every instance's {@code /actuator/health} concurrently (2 s per
 * probe, no credentials needed) on the instance's management port ({@code managementUrl}; a state file without one
 * is probed on {@code url}). An instance that does not answer is {@code DOWN}. Exit status: 0 when every
 * instance is {@code UP}; 1 when one is not, or no stack is running (no state file); 2 on a usage error or an
 * unreadable state file.
 *
 * <p>Resident memory is each process's {@code VmRSS} from {@code /proc/<pid>/status} (Linux): the instances' and the
 * launcher's (which runs the embedded broker), then their sum. Beside it, each process's proportional set size
 * ({@code Pss} from {@code /proc/<pid>/smaps_rollup}: a page shared by n processes counts 1/n in each) and its
 * sum, the memory the stack holds on this host with the pages its processes share (the JVM's code, a weight image
 * the workers map) counted once; the RSS sum counts such a page in every process that maps it. A process this host
 * cannot see (another OS, another container, already gone) shows {@code -} and is left out of the sums.
 *
 * <p>For each prefill worker, its prefix cache: the pages it holds and its hit rate (prompt tokens served from the
 * cache over prompt tokens looked up, since the worker started), read from its {@code /actuator/prometheus}
 * ({@code ripcord_prefix_cache_pages}, {@code ripcord_prefix_cache_hits_total},
 * {@code ripcord_prefix_cache_queries_total}); {@code -} when the scrape does not answer.
 *
 * <p>The state file is flat JSON that the launcher writes itself (no nesting but the instances array, no escapes but
 * {@code \"} and {@code \\}), read here with a few patterns so that this command needs no JSON library.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Lists every running instance of the local stack (./ripcord up): its URL, health and resident "
        + "memory.")
public final class StatusCommand implements Callable<Integer> {

  private static final Pattern INSTANCE = Pattern.compile("\\{[^{}]*\"id\"[^{}]*}");
  private static final Pattern HEALTH = Pattern.compile("\"status\"\\s*:\\s*\"([A-Z_]+)\"");
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

  @Spec CommandSpec spec;

  @Option(names = "--json", description = "Print JSON instead of a table.")
  boolean json;

  @Option(names = "--state", paramLabel = "FILE", defaultValue = ".ripcord/stack.json",
      description = "The state file ./ripcord up writes (default: ${DEFAULT-VALUE}).")
  Path stateFile;

  /** One instance as the state file names it, with what the probe found. */
  record Instance(String id, String role, String url, String managementUrl, long pid, String health, long rssBytes,
                  long pssBytes) {

    /** Where actuator answers: the management port, or the service port in a state file that names none. */
    String actuatorUrl() {
      return managementUrl.isEmpty() ? url : managementUrl;
    }
  }

  /** A prefill worker's prefix cache, as its metrics say. */
  record PrefixCache(long pages, long hitTokens, long queriedTokens) {

    String hitRate() {
      return queriedTokens == 0 ? "-"
          : String.format(java.util.Locale.ROOT, "%.1f%%", 100.0 * hitTokens / queriedTokens);
    }
  }

  private static final Pattern METRIC_LINE = Pattern.compile(
      "(?m)^(ripcord_prefix_cache_(?:pages|hits_total|queries_total))(?:\\{[^}]*})?\\s+([0-9.eE+-]+)$");

  /** Where {@code /proc/<pid>/status} files are read: {@code /proc} (a test gives its own). */
  static Path procRoot = Path.of("/proc");

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String state;
    try {
      state = Files.readString(stateFile);
    } catch (NoSuchFileException e) {
      err.println("ripcord status: no local stack is running (no " + stateFile + "; start one with ./ripcord up)");
      return 1;
    } catch (IOException e) {
      err.println("ripcord status: cannot read " + stateFile + ": " + e.getMessage());
      return 2;
    }
    List<Instance> listed = new ArrayList<>();
    Matcher m = INSTANCE.matcher(state);
    while (m.find()) {
      String object = m.group();
      listed.add(new Instance(string(object, "id"), string(object, "role"), string(object, "url"),
          string(object, "managementUrl"), Long.parseLong(number(object, "pid")), null, -1, -1));
    }
    if (!state.contains("\"instances\"")) {
      err.println("ripcord status: " + stateFile + " is not a stack state file (no instances)");
      return 2;
    }
    HttpClient http = HttpClient.newBuilder().connectTimeout(PROBE_TIMEOUT).build();
    List<CompletableFuture<Instance>> probes = listed.stream().map(i -> probe(http, i)).toList();
    // Each process's memory read once, so that the rows and their sum agree.
    List<Instance> instances = probes.stream().map(CompletableFuture::join)
        .map(i -> new Instance(i.id(), i.role(), i.url(), i.managementUrl(), i.pid(), i.health(),
            residentBytes(i.pid()), proportionalBytes(i.pid()))).toList();
    java.util.Map<String, PrefixCache> caches = new java.util.LinkedHashMap<>();
    instances.stream().filter(i -> i.role().equals("prefill"))
        .map(i -> java.util.Map.entry(i.id(), prefixCache(http, i)))
        .toList()
        .forEach(e -> caches.put(e.getKey(), e.getValue().join()));
    boolean allUp = !instances.isEmpty() && instances.stream().allMatch(i -> i.health().equals("UP"));
    String kafka = string(state, "kafka");
    String startedAt = string(state, "startedAt");
    // The launcher's PID is the one before the instances array; each instance has its own.
    long launcherPid = Long.parseLong(number(state.substring(0, state.indexOf("\"instances\"")), "pid"));
    long launcherRss = residentBytes(launcherPid);
    long launcherPss = proportionalBytes(launcherPid);
    long totalRss = Math.max(0, launcherRss);
    long totalPss = Math.max(0, launcherPss);
    for (Instance i : instances) {
      totalRss += Math.max(0, i.rssBytes());
      totalPss += Math.max(0, i.pssBytes());
    }
    if (json) {
      StringBuilder body = new StringBuilder("{\"kafka\":").append(quote(kafka))
          .append(",\"startedAt\":").append(quote(startedAt))
          .append(",\"healthy\":").append(allUp)
          .append(",\"launcher\":{\"pid\":").append(launcherPid)
          .append(",\"rssBytes\":").append(jsonBytes(launcherRss))
          .append(",\"pssBytes\":").append(jsonBytes(launcherPss))
          .append("},\"rssBytes\":").append(totalRss)
          .append(",\"pssBytes\":").append(totalPss).append(",\"instances\":[");
      String separator = "";
      for (Instance i : instances) {
        body.append(separator).append("{\"id\":").append(quote(i.id())).append(",\"role\":").append(quote(i.role()))
            .append(",\"url\":").append(quote(i.url()))
            .append(",\"managementUrl\":").append(quote(i.actuatorUrl())).append(",\"pid\":").append(i.pid())
            .append(",\"health\":").append(quote(i.health()))
            .append(",\"rssBytes\":").append(jsonBytes(i.rssBytes()))
            .append(",\"pssBytes\":").append(jsonBytes(i.pssBytes()));
        PrefixCache cache = caches.get(i.id());
        if (cache != null) {
          body.append(",\"prefixCache\":{\"pages\":").append(cache.pages())
              .append(",\"hitTokens\":").append(cache.hitTokens())
              .append(",\"queriedTokens\":").append(cache.queriedTokens()).append('}');
        } else if (i.role().equals("prefill")) {
          body.append(",\"prefixCache\":null");
        }
        body.append('}');
        separator = ",";
      }
      out.println(body.append("]}"));
    } else {
      out.printf("%-12s %-8s %-28s %-8s %-8s %-9s %s%n", "INSTANCE", "ROLE", "URL", "PID", "HEALTH", "RSS", "PSS");
      for (Instance i : instances) {
        out.printf("%-12s %-8s %-28s %-8d %-8s %-9s %s%n", i.id(), i.role(), i.url(), i.pid(), i.health(),
            mebibytes(i.rssBytes()), mebibytes(i.pssBytes()));
      }
      out.printf("%-12s %-8s %-28s %-8d %-8s %-9s %s%n", "launcher", "broker", kafka, launcherPid, "",
          mebibytes(launcherRss), mebibytes(launcherPss));
      out.println();
      for (Instance i : instances) {
        if (i.role().equals("prefill")) {
          PrefixCache cache = caches.get(i.id());
          out.println(cache == null ? "prefix cache of " + i.id() + ": - (no metrics)"
              : "prefix cache of " + i.id() + ": " + cache.pages() + " pages, hit rate " + cache.hitRate() + " ("
                  + cache.hitTokens() + " of " + cache.queriedTokens() + " prompt tokens)");
        }
      }
      out.println("kafka " + kafka + "   started " + (startedAt.isEmpty() ? "?" : startedAt)
          + "   resident memory " + mebibytes(totalRss) + " in all (RSS summed); " + mebibytes(totalPss)
          + " with the pages the processes share counted once (PSS summed)");
    }
    out.flush();
    return allUp ? 0 : 1;
  }

  /** The string value of {@code "key":"..."} in {@code json}, or "" if absent. */
  static String string(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
    return m.find() ? m.group(1).replace("\\\"", "\"").replace("\\\\", "\\") : "";
  }

  private static String number(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(\\d+)").matcher(json);
    return m.find() ? m.group(1) : "0";
  }

  /** {@code VmRSS} of {@code pid} in bytes, or -1 when this host shows no such process. */
  static long residentBytes(long pid) {
    return kibibytesField(pid, "status", "VmRSS:");
  }

  /** {@code Pss} of {@code pid} in bytes ({@code smaps_rollup}), or -1 when this host shows no such process. */
  static long proportionalBytes(long pid) {
    return kibibytesField(pid, "smaps_rollup", "Pss:");
  }

  /** The {@code field} line of {@code /proc/<pid>/<file>}, in bytes, or -1. */
  private static long kibibytesField(long pid, String file, String field) {
    if (pid <= 0) {
      return -1;
    }
    try {
      for (String line : Files.readAllLines(procRoot.resolve(Long.toString(pid)).resolve(file))) {
        if (line.startsWith(field)) {
          String[] parts = line.substring(field.length()).trim().split("\\s+");
          return Long.parseLong(parts[0]) * 1024; // the kernel writes kB, meaning KiB
        }
      }
      return -1;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static String mebibytes(long bytes) {
    return bytes < 0 ? "-" : String.format(java.util.Locale.ROOT, "%d MiB", Math.round(bytes / 1048576.0));
  }

  private static String jsonBytes(long bytes) {
    return bytes < 0 ? "null" : Long.toString(bytes);
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  private static CompletableFuture<Instance> probe(HttpClient http, Instance instance) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(instance.actuatorUrl() + "/actuator/health"))
          .timeout(PROBE_TIMEOUT).GET().build();
    } catch (IllegalArgumentException e) {
      return CompletableFuture.completedFuture(with(instance, "INVALID_URL"));
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .thenApply(response -> with(instance, health(response)))
        .exceptionally(e -> with(instance, "DOWN"));
  }

  /** The prefix cache a prefill worker's scrape reports, or null when it does not answer or names none. */
  private static CompletableFuture<PrefixCache> prefixCache(HttpClient http, Instance instance) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(instance.actuatorUrl() + "/actuator/prometheus"))
          .timeout(PROBE_TIMEOUT).GET().build();
    } catch (IllegalArgumentException e) {
      return CompletableFuture.completedFuture(null);
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .thenApply(response -> response.statusCode() == 200 ? prefixCache(response.body()) : null)
        .exceptionally(e -> null);
  }

  /** The three prefix-cache series of a Prometheus scrape, or null when it has none of them. */
  static PrefixCache prefixCache(String scrape) {
    java.util.Map<String, Long> values = new java.util.HashMap<>();
    Matcher m = METRIC_LINE.matcher(scrape);
    while (m.find()) {
      values.merge(m.group(1), Math.round(Double.parseDouble(m.group(2))), Long::sum);
    }
    if (values.isEmpty()) {
      return null;
    }
    return new PrefixCache(values.getOrDefault("ripcord_prefix_cache_pages", 0L),
        values.getOrDefault("ripcord_prefix_cache_hits_total", 0L),
        values.getOrDefault("ripcord_prefix_cache_queries_total", 0L));
  }

  private static String health(HttpResponse<String> response) {
    Matcher m = HEALTH.matcher(response.body());
    return m.find() ? m.group(1) : "HTTP_" + response.statusCode();
  }

  private static Instance with(Instance i, String health) {
    return new Instance(i.id(), i.role(), i.url(), i.managementUrl(), i.pid(), health, i.rssBytes(), i.pssBytes());
  }
}
