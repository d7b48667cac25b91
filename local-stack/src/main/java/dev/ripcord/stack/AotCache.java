package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The JDK's ahead-of-time cache (JEP 483/514/515) for a service's JVM: classes of the service already loaded and
 * linked, so that a service JVM started with it spends less CPU and time getting Spring up. A stack test run starts
 * the same three services a dozen times; {@code ./ripcord up} starts them again after every Ctrl-C.
 *
 * <p>A cache belongs to one executable jar (its path and contents), one JDK and one set of JVM flags:
 * its directory, {@code <module>/target/aot/<key>/}, is named after all of them, so a rebuilt jar or other flags
 * simply miss it (and the stale directories of that jar are deleted when a new one is made). The cache only covers
 * classes loaded from the class path, not from a Boot jar's nested jars, so the service runs from the jar extracted
 * into that directory ({@code java -Djarmode=tools -jar ... extract}) when, and only when, the cache is there.
 *
 * <p>Lifecycle: {@link #train} makes the caches a stack lacks, before its services start, by starting each service
 * once with {@code -XX:AOTCacheOutput} and {@code -Dspring.context.exit=onRefresh} (the context is refreshed, then
 * the JVM exits and writes the cache); the three train in parallel. {@link #launch} is what a service JVM runs:
 * the extracted jar with its cache, or the executable jar as before. Anything that goes wrong while training (a
 * failed extraction, a training run that fails or hangs) is said once on standard error and leaves that service on
 * its executable jar: a missing cache costs time, never a test. A cache the JVM itself refuses (it checks the class
 * path) makes the JVM print one warning and run without it. {@code -Dripcord.stack.aot-cache=false} (a launcher
 * setting, like {@code ripcord.stack.startup-timeout-seconds}) turns the whole thing off.
 */
final class AotCache {

    /** JVM system property of the launcher: {@code false} runs every service from its executable jar, untrained. */
    static final String ENABLED_PROPERTY = "ripcord.stack.aot-cache";

    private static final String EXTRACTED_DIR = "app";
    /**
     * How long an extraction, or a training run (a start up to a refreshed context, then the cache written), may
     * take: a hang guard, not a performance bound (a training run took over 300 s on a 2-core machine at load 60).
     */
    private static final long TRAINING_TIMEOUT_SECONDS = 600;

    /**
     * About how long the three training runs take together on two cores (they run in parallel): what
     * {@code ./ripcord up} tells the user before a first start after a build, which is otherwise silent that long.
     */
    static final int EXPECTED_SECONDS = 45;
    /** Directories whose failure was already reported, so that each is said once per launcher JVM. */
    private static final Set<Path> REPORTED = ConcurrentHashMap.newKeySet();

    private static final Map<Path, Object> LOCKS = new ConcurrentHashMap<>();

    private final Path execJar;
    /** {@code <module>/target/aot/<jar key>/}: the extracted jar, and one cache per set of JVM flags. */
    private final Path dir;
    private final Path cacheFile;

    private AotCache(Path execJar, Path dir, Path cacheFile) {
        this.execJar = execJar;
        this.dir = dir;
        this.cacheFile = cacheFile;
    }

    /**
     * The cache for running {@code execJar} with {@code jvmFlags} on this JDK (present or not). Flags that only
     * steer the JIT ({@code -XX:TieredStopAtLevel}, the tiers' thresholds {@code -XX:Tier*}, {@code
     * -XX:CompileThresholdScaling}, the code cache's size, a compiler directives file and the diagnostic unlock it
     * needs) are not part of its identity: the cache holds classes (and profiles a JVM without C2 ignores), and the
     * JVM maps a cache made with C2 into a JVM without it and the other way round, so a jar run both ways (test
     * stacks' workers, {@code up}'s and a test stack's JIT settings) is trained once. Nor is the fault bench's
     * sabotage switch ({@code -Dripcord.sabotage=KIND}): it arms a hook at start and shapes no class the cache
     * holds, so a sabotaged service maps the cache its unsabotaged twin trained.
     */
    /** The fault bench's sabotage switch as a JVM flag ({@code dev.ripcord.cancel.Sabotage#PROPERTY}). */
    static final String SABOTAGE_FLAG = "-Dripcord.sabotage=";

    static AotCache of(Path execJar, List<String> jvmFlags) {
        Path dir = execJar.toAbsolutePath().getParent().resolve("aot").resolve(jarKey(execJar));
        List<String> identity = jvmFlags.stream().filter(f -> !f.startsWith("-XX:Tier") // TieredStopAtLevel too
                && !f.startsWith("-XX:CompileThresholdScaling=") && !f.startsWith("-XX:CompilerDirectivesFile=")
                && !f.startsWith("-XX:ReservedCodeCacheSize=")
                && !f.equals("-XX:+UnlockDiagnosticVMOptions") && !f.startsWith(SABOTAGE_FLAG)).toList();
        return new AotCache(execJar, dir, dir.resolve(hash(String.join(" ", identity)) + ".aot"));
    }

    static boolean enabled() {
        return Boolean.parseBoolean(System.getProperty(ENABLED_PROPERTY, "true"));
    }

    /**
     * What follows the JVM flags on a service's command line: {@code -XX:AOTCache=<cache> -jar <extracted jar>} when
     * the cache is there, otherwise {@code -jar <executable jar>}.
     */
    List<String> launch() {
        if (enabled() && ready()) {
            return List.of("-XX:AOTCache=" + cacheFile, "-jar", extractedJar().toString());
        }
        return List.of("-jar", execJar.toString());
    }

    /** Where the cache is, or will be once trained. */
    Path cacheFile() {
        return cacheFile;
    }

    boolean ready() {
        return Files.isRegularFile(cacheFile) && Files.isRegularFile(extracted());
    }

    /**
     * Makes the missing caches of {@code services}, in parallel, and returns once each is made or has failed. A
     * training run is the service's own start up to a refreshed context: its JVM flags, then its
     * {@code args} (and {@code environment}), so it needs what the service needs to get that far (the broker).
     * Its output goes to {@code <logDir>/<role>-aot-training.log}. Never throws: a failure leaves that service
     * untrained.
     */
    static void train(Map<Role, Service> services, Path logDir) {
        if (!enabled()) {
            return;
        }
        // A thread each (they wait on child processes): the common pool may run one task at a time on 2 cores.
        List<Thread> trainings = new ArrayList<>();
        services.forEach((role, service) -> trainings.add(Thread.ofPlatform().daemon().name("aot-" + role.shortName())
                .start(() -> {
                    try {
                        AotCache cache = of(service.execJar(), service.jvmFlags());
                        if (!cache.ready()) {
                            cache.trainOnce(role, service, logDir);
                        }
                    } catch (RuntimeException e) {
                        System.err.println("ripcord: no AOT cache for " + role.shortName() + ": " + e.getMessage());
                    }
                })));
        try {
            for (Thread training : trainings) {
                training.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether {@code service} would be trained by {@link #train}: caches on, and its cache not made yet. */
    static boolean untrained(Service service) {
        return enabled() && !of(service.execJar(), service.jvmFlags()).ready();
    }

    /** What a training run starts: the service's executable jar, its JVM flags, arguments and environment. */
    record Service(Path execJar, List<String> jvmFlags, List<String> args, Map<String, String> environment) {
        Service {
            jvmFlags = List.copyOf(jvmFlags);
            args = List.copyOf(args);
            environment = Map.copyOf(environment);
        }
    }

    /** Trains under a lock, so that two stacks (in this JVM or another) train a directory once between them. */
    private void trainOnce(Role role, Service service, Path logDir) {
        Path log = logDir.resolve(role.shortName() + "-aot-training.log");
        try {
            Files.createDirectories(dir);
            synchronized (LOCKS.computeIfAbsent(dir, d -> new Object())) {
                try (FileChannel channel = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE); FileLock lock = channel.lock()) {
                    if (!Files.isRegularFile(extracted())) {
                        deleteSiblings();
                        extract(log);
                    }
                    if (!ready()) {
                        record(role, service, log);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            if (REPORTED.add(cacheFile)) {
                System.err.println("ripcord: no AOT cache for " + role.shortName() + " (" + e.getMessage()
                        + "); it starts from " + execJar.getFileName() + " without one");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void extract(Path log) throws IOException, InterruptedException {
        Path app = dir.resolve(EXTRACTED_DIR);
        deleteTree(app);
        Files.deleteIfExists(extracted());
        run(List.of(java(), "-Djarmode=tools", "-jar", execJar.toString(), "extract", "--destination",
                app.toString()), Map.of(), log, "extracting " + execJar.getFileName());
        if (!Files.isRegularFile(extractedJar())) {
            throw new IllegalStateException("extracting " + execJar + " made no " + extractedJar());
        }
        Files.writeString(extracted(), execJar + "\n");
    }

    private void record(Role role, Service service, Path log)
            throws IOException, InterruptedException {
        Path training = Path.of(cacheFile + ".training");
        Files.deleteIfExists(training);
        List<String> command = new ArrayList<>();
        command.add(java());
        command.addAll(service.jvmFlags());
        command.add("-XX:AOTCacheOutput=" + training);
        command.add("-Dspring.context.exit=onRefresh");
        command.add("-jar");
        command.add(extractedJar().toString());
        command.add("--server.port=0");
        command.addAll(service.args());
        run(command, service.environment(), log, "training " + role.shortName());
        if (!Files.isRegularFile(training) || Files.size(training) == 0) {
            throw new IllegalStateException("the training run of " + role.shortName() + " wrote no cache; see " + log);
        }
        Files.move(training, cacheFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static void run(List<String> command, Map<String, String> environment, Path log, String what)
            throws IOException, InterruptedException {
        Files.createDirectories(log.getParent());
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(environment);
        Process process = builder.start();
        if (!process.waitFor(TRAINING_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly); // the JVM that assembles the cache
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
            throw new IllegalStateException(what + " did not finish within " + TRAINING_TIMEOUT_SECONDS
                    + " s; see " + log);
        }
        if (process.exitValue() != 0) {
            throw new IllegalStateException(what + " exited with status " + process.exitValue() + "; see " + log);
        }
    }

    /** Caches of earlier builds of this jar (or other flags) for it: each is hundreds of megabytes. */
    private void deleteSiblings() throws IOException {
        try (Stream<Path> siblings = Files.list(dir.getParent())) {
            for (Path sibling : siblings.filter(p -> !p.equals(dir)).toList()) {
                deleteTree(sibling);
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Written once the extraction is complete: an interrupted one is redone. */
    private Path extracted() {
        return dir.resolve(EXTRACTED_DIR + ".done");
    }

    private Path extractedJar() {
        return dir.resolve(EXTRACTED_DIR).resolve(execJar.getFileName());
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * The jar's path, size and central directory (its last megabyte, which lists every entry's CRC: the builds are
     * reproducible, so the modification time says nothing), and the JDK: what an extraction and its caches are valid
     * for.
     */
    private static String jarKey(Path execJar) {
        try (FileChannel jar = FileChannel.open(execJar, StandardOpenOption.READ)) {
            long size = jar.size();
            ByteBuffer tail = ByteBuffer.allocate((int) Math.min(size, 1 << 20));
            jar.position(size - tail.capacity());
            while (tail.hasRemaining() && jar.read(tail) >= 0) {
                // read the whole tail
            }
            MessageDigest digest = sha256();
            digest.update(String.join("\n", execJar.toAbsolutePath().toString(), Long.toString(size),
                    System.getProperty("java.home"), System.getProperty("java.vm.version"))
                    .getBytes(StandardCharsets.UTF_8));
            digest.update(tail.flip());
            return HexFormat.of().formatHex(digest.digest(), 0, 8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + execJar, e);
        }
    }

    private static String hash(String identity) {
        return HexFormat.of().formatHex(sha256().digest(identity.getBytes(StandardCharsets.UTF_8)), 0, 8);
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
