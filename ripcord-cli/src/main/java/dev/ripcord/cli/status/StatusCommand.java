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
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ./ripcord status}: every instance of the running local stack, its URL and its health.
 *
 * <p>Reads the state file {@code ./ripcord up} writes once the stack is healthy ({@code .ripcord/stack.json}, see
 * local-stack's {@code StackStateFile}) and probes every instance's {@code /actuator/health} concurrently (2 s per
 * probe, no credentials needed). An instance that does not answer is {@code DOWN}. Exit status: 0 when every
 * instance is {@code UP}; 1 when one is not, or no stack is running (no state file); 2 on a usage error or an
 * unreadable state file.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Lists every running instance of the local stack (./ripcord up), its URL and health.")
public final class StatusCommand implements Callable<Integer> {

  private static final ObjectMapper JSON = JsonMapper.builder().build();
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

  @Spec CommandSpec spec;

  @Option(names = "--json", description = "Print JSON instead of a table.")
  boolean json;

  @Option(names = "--state", paramLabel = "FILE", defaultValue = ".ripcord/stack.json",
      description = "The state file ./ripcord up writes (default: ${DEFAULT-VALUE}).")
  Path stateFile;

  /** One instance as the state file names it, with what the probe found. */
  record Instance(String id, String role, String url, long pid, String health) {}

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    JsonNode state;
    try {
      state = JSON.readTree(Files.readString(stateFile));
    } catch (NoSuchFileException e) {
      err.println("ripcord status: no local stack is running (no " + stateFile + "; start one with ./ripcord up)");
      return 1;
    } catch (IOException | RuntimeException e) {
      err.println("ripcord status: cannot read " + stateFile + ": " + e.getMessage());
      return 2;
    }
    List<Instance> listed = new ArrayList<>();
    for (JsonNode node : state.path("instances")) {
      listed.add(new Instance(node.path("id").asText(), node.path("role").asText(), node.path("url").asText(),
          node.path("pid").asLong(), null));
    }
    HttpClient http = HttpClient.newBuilder().connectTimeout(PROBE_TIMEOUT).build();
    List<CompletableFuture<Instance>> probes = listed.stream().map(i -> probe(http, i)).toList();
    List<Instance> instances = probes.stream().map(CompletableFuture::join).toList();
    boolean allUp = !instances.isEmpty() && instances.stream().allMatch(i -> i.health().equals("UP"));
    String kafka = state.path("kafka").asText("");
    if (json) {
      ObjectNode root = JSON.createObjectNode();
      root.put("kafka", kafka);
      root.put("startedAt", state.path("startedAt").asText(""));
      root.put("healthy", allUp);
      ArrayNode array = root.putArray("instances");
      for (Instance i : instances) {
        array.addObject().put("id", i.id()).put("role", i.role()).put("url", i.url()).put("pid", i.pid())
            .put("health", i.health());
      }
      out.println(JSON.writeValueAsString(root));
    } else {
      out.printf("%-12s %-8s %-28s %-8s %s%n", "INSTANCE", "ROLE", "URL", "PID", "HEALTH");
      for (Instance i : instances) {
        out.printf("%-12s %-8s %-28s %-8d %s%n", i.id(), i.role(), i.url(), i.pid(), i.health());
      }
      out.println();
      out.println("kafka " + kafka + "   started " + state.path("startedAt").asText("?"));
    }
    out.flush();
    return allUp ? 0 : 1;
  }

  private static CompletableFuture<Instance> probe(HttpClient http, Instance instance) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(instance.url() + "/actuator/health"))
          .timeout(PROBE_TIMEOUT).GET().build();
    } catch (IllegalArgumentException e) {
      return CompletableFuture.completedFuture(with(instance, "INVALID_URL"));
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .thenApply(response -> with(instance, health(response)))
        .exceptionally(e -> with(instance, "DOWN"));
  }

  private static String health(HttpResponse<String> response) {
    try {
      String status = JSON.readTree(response.body()).path("status").asText("");
      return status.isEmpty() ? "HTTP_" + response.statusCode() : status;
    } catch (RuntimeException e) {
      return "HTTP_" + response.statusCode();
    }
  }

  private static Instance with(Instance i, String health) {
    return new Instance(i.id(), i.role(), i.url(), i.pid(), health);
  }
}
