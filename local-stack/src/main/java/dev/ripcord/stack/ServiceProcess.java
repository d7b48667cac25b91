package dev.ripcord.stack;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One service running as a child JVM: started from its executable jar, its output copied to a log file and relayed
 * line by line with a {@code [role]} prefix (all of it, or its warnings and errors: {@link ConsoleFilter}), stopped
 * with SIGTERM so that Spring's graceful shutdown runs, then killed if it does not exit in time. Its actuator
 * (health, metrics) answers on a management port of its own, bound to the loopback interface only: the service port
 * never serves {@code /actuator}.
 */
final class ServiceProcess implements AutoCloseable {

    private static final long GRACEFUL_STOP_SECONDS = 30;
    private static final Duration GRACEFUL_STOP = Duration.ofSeconds(GRACEFUL_STOP_SECONDS);

    /** How the process was started, so that {@link #restart()} can start it again exactly so. */
    private record Launch(Role role, String name, Path jar, int port, int managementPort, List<String> jvmFlags,
                          List<String> args, Map<String, String> environment, Path logDir, PrintStream console,
                          boolean verbose) {
    }

    private final Launch launch;
    private final Role role;
    private final String name;
    private final int port;
    private final int managementPort;
    private final Process process;
    private final Path logFile;
    private final Thread relay;

    private ServiceProcess(Launch launch, Process process, Path logFile, Thread relay) {
        this.launch = launch;
        this.role = launch.role();
        this.name = launch.name();
        this.port = launch.port();
        this.managementPort = launch.managementPort();
        this.process = process;
        this.logFile = logFile;
        this.relay = relay;
    }

    /**
     * Starts one instance.
     *
     * @param name           the instance's name: its log prefix and log file ({@code <name>.log}); the role's short
     *                       name when the stack runs one instance of the role, {@code <role>-<n>} otherwise
     * @param managementPort the port its actuator answers on, on the loopback interface
     * @param console        where its lines are relayed with a {@code [name]} prefix, or null
     * @param verbose        every line to {@code console}; else warnings and errors only ({@link ConsoleFilter})
     */
    static ServiceProcess start(Role role, String name, Path jar, int port, int managementPort, List<String> jvmFlags,
                                List<String> args, Map<String, String> environment, Path logDir, PrintStream console,
                                boolean verbose) {
        return start(new Launch(role, name, jar, port, managementPort, List.copyOf(jvmFlags), List.copyOf(args),
                Map.copyOf(environment), logDir, console, verbose), false);
    }

    /**
     * Starts this service again as it was started (same jar, ports, arguments, environment), appending to the same
     * log file; this process must be gone ({@link #kill()}, {@link #terminate()}). Does not wait for health.
     */
    ServiceProcess restart() {
        if (process.isAlive()) {
            throw new IllegalStateException(name + " (pid " + process.pid() + ") is still running");
        }
        try {
            relay.join(Duration.ofSeconds(5)); // its last lines, before the new process appends to the same file
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return start(launch, true);
    }

    private static ServiceProcess start(Launch launch, boolean append) {
        Role role = launch.role();
        String name = launch.name();
        Path jar = launch.jar();
        int port = launch.port();
        Path logDir = launch.logDir();
        PrintStream console = launch.console();
        Map<String, String> environment = launch.environment();
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("no executable jar for " + role.shortName() + " at " + jar
                    + " (run ./ripcord build first)");
        }
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(launch.jvmFlags());
        command.addAll(AotCache.of(jar, launch.jvmFlags()).launch()); // -jar, with the classes cached when they are
        command.add("--server.port=" + port);
        command.add("--management.server.port=" + launch.managementPort());
        command.add("--management.server.address=127.0.0.1");
        command.addAll(launch.args());
        Path logFile = logDir.resolve(name + ".log");
        try {
            Files.createDirectories(logDir);
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            builder.environment().putAll(environment); // secrets travel here, not on the command line
            Process process = builder.start();
            Writer log = append
                    ? Files.newBufferedWriter(logFile, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                            StandardOpenOption.APPEND)
                    : Files.newBufferedWriter(logFile, StandardCharsets.UTF_8);
            Thread relay = Thread.ofPlatform().daemon().name("relay-" + name).start(() -> {
                String prefix = "[" + name + "] ";
                ConsoleFilter filter = new ConsoleFilter(launch.verbose());
                try (BufferedReader in = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)); log) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (console != null && filter.show(line)) {
                            console.println(prefix + ConsoleFilter.compact(line));
                        }
                        log.write(line);
                        log.write('\n');
                        log.flush();
                    }
                } catch (IOException e) {
                    // The child's stream closes when it exits; nothing more to relay.
                }
            });
            return new ServiceProcess(launch, process, logFile, relay);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + ": " + command, e);
        }
    }

    Role role() {
        return role;
    }

    /** The instance's name ({@code gateway}, or {@code gateway-2} when the stack runs several). */
    String name() {
        return name;
    }

    int port() {
        return port;
    }

    String url() {
        return "http://localhost:" + port;
    }

    int managementPort() {
        return managementPort;
    }

    /** Where its actuator answers ({@code /actuator/health}, {@code /actuator/prometheus}). */
    String managementUrl() {
        return "http://127.0.0.1:" + managementPort;
    }

    Path logFile() {
        return logFile;
    }

    boolean isAlive() {
        return process.isAlive();
    }

    long pid() {
        return process.pid();
    }

    /**
     * Polls {@code /actuator/health} on the management port until it answers {@code UP}.
     *
     * @throws IllegalStateException if the process exits or the deadline passes first
     */
    void awaitHealthy(Duration timeout) {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create(managementUrl() + "/actuator/health"))
                .timeout(Duration.ofSeconds(5)).GET().build();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with status " + process.exitValue()
                        + " before becoming healthy; see " + logFile);
            }
            try {
                HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200 && response.body().contains("\"UP\"")) {
                    return;
                }
            } catch (IOException e) {
                // Not listening yet.
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + name, e);
            }
            sleep(Duration.ofMillis(250));
        }
        throw new IllegalStateException(name + " did not become healthy within " + timeout
                + "; see " + logFile);
    }

    /**
     * SIGKILL at once, as a crash would: no graceful shutdown, no drain. Returns once the process is gone. For fault
     * tests; {@link #close()} is still safe afterwards.
     */
    void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + " (pid " + process.pid()
                        + ") is still alive 30 s after SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing " + name, e);
        }
    }

    /**
     * SIGTERM, wait for graceful shutdown, then SIGKILL. Idempotent. The signal goes through the {@link ProcessHandle}:
     * {@link Process#destroy()} also closes our end of the child's output at once, so everything the child logs while
     * it shuts down (the drain, above all) would be lost, and the child's writes would fail on a pipe nobody reads.
     */
    @Override
    public void close() {
        terminate();
    }

    /**
     * What {@link #close()} does, saying how it went: SIGTERM through the {@link ProcessHandle}, up to
     * {@value #GRACEFUL_STOP_SECONDS} s for the graceful shutdown (the drain included), then SIGKILL; returns once the
     * process is gone and its last lines are in the log file.
     *
     * @return true if the process exited on its own after SIGTERM (or had already exited), false if it had to be
     *         killed
     */
    boolean terminate() {
        boolean graceful = true;
        if (process.isAlive()) {
            process.toHandle().destroy();
            try {
                if (!process.waitFor(GRACEFUL_STOP.toMillis(), TimeUnit.MILLISECONDS)) {
                    graceful = false;
                    process.toHandle().destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                graceful = false;
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try {
            relay.join(Duration.ofSeconds(5)); // the child's last lines, up to its exit
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return graceful;
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
