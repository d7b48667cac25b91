package dev.ripcord.cli.status;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.ripcord.cli.RipcordCli;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class StatusCommandTest {

  @TempDir Path dir;
  private HttpServer healthy;
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  @BeforeEach
  void startAHealthyInstance() throws IOException {
    healthy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    healthy.createContext("/actuator/health", exchange -> {
      byte[] body = "{\"status\":\"UP\",\"groups\":[\"liveness\",\"readiness\"]}".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    healthy.start();
  }

  @AfterEach
  void stop() {
    healthy.stop(0);
  }

  private int run(String... args) {
    CommandLine cli = new CommandLine(new RipcordCli());
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }

  private Path stateFile(int upPort, int downPort) throws IOException {
    Path file = dir.resolve("stack.json");
    Files.writeString(file, """
        {"schemaVersion":1,"pid":1,"startedAt":"2026-12-01T12:00:00Z","kafka":"localhost:9092","logDir":"/tmp",
         "instances":[{"id":"gateway-1","role":"gateway","url":"http://127.0.0.1:%d","pid":11},
                      {"id":"gateway-2","role":"gateway","url":"http://127.0.0.1:%d","pid":12}]}
        """.formatted(upPort, downPort));
    return file;
  }

  /** A port nothing listens on, kept bound (without SO_REUSEADDR) so no other socket can take it over. */
  private static final Socket RESERVED_PORT = reservePort();

  private static Socket reservePort() {
    try {
      Socket socket = new Socket();
      socket.setReuseAddress(false);
      socket.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      return socket;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static int closedPort() {
    return RESERVED_PORT.getLocalPort();
  }

  @Test
  void showsEachPrefillWorkersCachedPagesAndHitRateFromItsMetrics() throws IOException {
    healthy.createContext("/actuator/prometheus", exchange -> {
      byte[] body = """
          # HELP ripcord_prefix_cache_pages KV pages in the prefix cache
          ripcord_prefix_cache_pages{model_name="m",service="prefill"} 12.0
          ripcord_prefix_cache_hits_total{model_name="m",service="prefill"} 384.0
          ripcord_prefix_cache_queries_total{model_name="m",service="prefill"} 1024.0
          """.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    int port = healthy.getAddress().getPort();
    Path file = dir.resolve("stack.json");
    Files.writeString(file, """
        {"schemaVersion":1,"pid":1,"startedAt":"2026-12-01T12:00:00Z","kafka":"localhost:9092","logDir":"/tmp",
         "instances":[{"id":"prefill-1","role":"prefill","url":"http://127.0.0.1:%d","pid":11},
                      {"id":"prefill-2","role":"prefill","url":"http://127.0.0.1:%d","pid":12}]}
        """.formatted(port, closedPort()));

    run("status", "--state", file.toString());
    assertThat(out.toString())
        .contains("prefix cache of prefill-1: 12 pages, hit rate 37.5% (384 of 1024 prompt tokens)")
        .contains("prefix cache of prefill-2: - (no metrics)");

    out.getBuffer().setLength(0);
    run("status", "--json", "--state", file.toString());
    assertThat(out.toString()).contains("\"prefixCache\":{\"pages\":12,\"hitTokens\":384,\"queriedTokens\":1024}",
        "\"prefixCache\":null");
  }

  @Test
  void listsEveryInstanceWithItsHealthAndFailsWhenOneIsDown() throws IOException {
    Path file = stateFile(healthy.getAddress().getPort(), closedPort());

    int status = run("status", "--state", file.toString());

    assertThat(status).isEqualTo(1);
    assertThat(out.toString())
        .containsPattern("gateway-1\\s+gateway\\s+http://127\\.0\\.0\\.1:\\d+\\s+11\\s+UP")
        .containsPattern("gateway-2\\s+gateway\\s+http://127\\.0\\.0\\.1:\\d+\\s+12\\s+DOWN")
        .contains("kafka localhost:9092");
  }

  @Test
  void jsonNamesEveryInstanceAndExitsZeroWhenAllAreUp() throws IOException {
    int port = healthy.getAddress().getPort();
    Path file = stateFile(port, port);

    int status = run("status", "--json", "--state", file.toString());

    assertThat(status).isZero();
    assertThat(out.toString()).contains("\"healthy\":true", "\"id\":\"gateway-1\"", "\"id\":\"gateway-2\"",
        "\"health\":\"UP\"", "\"url\":\"http://127.0.0.1:" + port + "\"");
  }

  /**
   * Actuator answers on each instance's management port, not on its service port (which serves no
   * {@code /actuator} at all): the probe follows the state file's {@code managementUrl}.
   */
  @Test
  void probesHealthOnTheManagementPortTheStateFileNames() throws IOException {
    int management = healthy.getAddress().getPort();
    Path file = dir.resolve("stack.json");
    Files.writeString(file, """
        {"schemaVersion":1,"pid":1,"startedAt":"2026-12-01T12:00:00Z","kafka":"localhost:9092","logDir":"/tmp",
         "instances":[{"id":"gateway","role":"gateway","url":"http://127.0.0.1:%d",
                       "managementUrl":"http://127.0.0.1:%d","pid":11}]}
        """.formatted(closedPort(), management));

    assertThat(run("status", "--json", "--state", file.toString())).isZero();
    assertThat(out.toString()).contains("\"health\":\"UP\"", "\"url\":\"http://127.0.0.1:" + closedPort() + "\"",
        "\"managementUrl\":\"http://127.0.0.1:" + management + "\"");
  }

  @Test
  void withoutAStateFileItSaysNoStackIsRunning() {
    int status = run("status", "--state", dir.resolve("absent.json").toString());

    assertThat(status).isEqualTo(1);
    assertThat(err.toString()).contains("no local stack is running");
  }

  @Test
  void showsEachProcessResidentMemoryAndTheirSum() throws IOException {
    int port = healthy.getAddress().getPort();
    Path file = stateFile(port, port);
    Path proc = dir.resolve("proc");
    writeStatus(proc, 1, "VmRSS:\t  307200 kB"); // the launcher: 300 MiB
    writeStatus(proc, 11, "VmRSS:\t  204800 kB"); // 200 MiB
    writeSmapsRollup(proc, 1, 286720); // 280 MiB: the launcher shares 20 MiB with another process
    writeSmapsRollup(proc, 11, 194560); // 190 MiB
    // pid 12 has no status file here: shown as "-", left out of the sum
    Path before = StatusCommand.procRoot;
    StatusCommand.procRoot = proc;
    try {
      assertThat(run("status", "--state", file.toString())).isZero();
      assertThat(out.toString())
          .containsPattern("gateway-1\\s+gateway\\s+\\S+\\s+11\\s+UP\\s+200 MiB\\s+190 MiB")
          .containsPattern("gateway-2\\s+gateway\\s+\\S+\\s+12\\s+UP\\s+-\\s+-")
          .containsPattern("launcher\\s+broker\\s+localhost:9092\\s+1\\s+300 MiB\\s+280 MiB")
          .contains("resident memory 500 MiB in all (RSS summed); 470 MiB with the pages the processes share "
              + "counted once (PSS summed)");

      out.getBuffer().setLength(0);
      assertThat(run("status", "--json", "--state", file.toString())).isZero();
      assertThat(out.toString()).contains("\"launcher\":{\"pid\":1,\"rssBytes\":314572800,\"pssBytes\":293601280}",
          "\"rssBytes\":524288000,\"pssBytes\":492830720",
          "\"pid\":11,\"health\":\"UP\",\"rssBytes\":209715200,\"pssBytes\":199229440",
          "\"pid\":12,\"health\":\"UP\",\"rssBytes\":null,\"pssBytes\":null");
    } finally {
      StatusCommand.procRoot = before;
    }
  }

  private static void writeSmapsRollup(Path proc, long pid, long pssKib) throws IOException {
    Path dir = proc.resolve(Long.toString(pid));
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("smaps_rollup"), "00400000-7fff00000000 ---p 00000000 00:00 0   [rollup]\n"
        + "Rss:              999999 kB\nPss:              " + pssKib + " kB\nPss_Anon:          1000 kB\n");
  }

  private static void writeStatus(Path proc, long pid, String rssLine) throws IOException {
    Path dir = proc.resolve(Long.toString(pid));
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("status"), "Name:\tjava\nVmPeak:\t 9999 kB\n" + rssLine + "\nThreads:\t42\n");
  }
}
