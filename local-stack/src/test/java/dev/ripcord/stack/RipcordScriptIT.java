package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ripcord} script's help and argument checks, run as a user runs them: they answer before any JDK lookup
 * or Maven build (a build would show in this test's output and take minutes; none of these paths has one), and they
 * agree with {@link StackOptions}, whose option list they read from the same file.
 */
class RipcordScriptIT {

    private static final Path ROOT = root();

    record Result(int status, String out, String err) {
    }

    private static Result run(String... args) throws IOException, InterruptedException {
        return runIn(ROOT, null, args);
    }

    /** The script in {@code root}, with {@code path} as its PATH when not null. */
    private static Result runIn(Path root, String path, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("bash", root.resolve("ripcord").toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("ripcord-out", ".txt");
        Path err = Files.createTempFile("ripcord-err", ".txt");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).directory(root.toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile());
            if (path != null) {
                builder.environment().put("PATH", path);
                builder.environment().remove("JAVA_HOME");
                builder.environment().remove("RIPCORD_JAVA_HOME");
            }
            Process process = builder.start();
            if (!process.waitFor(60, TimeUnit.SECONDS)) { // a hang guard, not a speed bound
                process.destroyForcibly();
                throw new AssertionError("./ripcord " + String.join(" ", args) + " did not finish");
            }
            return new Result(process.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.delete(out);
            Files.delete(err);
        }
    }

    @Test
    void upHelpPrintsTheOptionFileThatStackOptionsReads() throws Exception {
        Result help = run("up", "--help");

        assertThat(help.status()).isZero();
        assertThat(help.out().strip()).isEqualTo(StackOptions.USAGE.strip());
        assertThat(help.err()).isEmpty();
    }

    @Test
    void aMistypedUpOptionFailsWithTheSuggestionStackOptionsWouldMake() throws Exception {
        for (String key : List.of("modle", "gateway-prot", "opne", "ripcrod.engine.preset", "frobnicate",
                "server.port", "kafak")) {
            Result result = run("up", "--" + key + "=x");

            assertThat(result.status()).as(key).isEqualTo(2);
            assertThat(result.err().strip()).as(key).isEqualTo("ripcord up: " + StackOptions.unknown(key));
            assertThat(result.out()).as(key).isEmpty();
        }
        assertThat(run("up", "--modle=x").err()).contains("unknown option '--modle'; did you mean '--model'?");
    }

    @Test
    void everyCommandAnswersHelpWithoutBuilding() throws Exception {
        Result overview = run("--help");
        assertThat(overview.status()).isZero();
        for (String command : List.of("up", "fetch-model", "test", "build", "bench", "convert", "synth-model", "model-bench",
                "images", "compose", "hash-key", "java")) {
            assertThat(overview.out()).as(command).contains("./ripcord " + command);
            Result help = run(command, "--help");
            assertThat(help.status()).as(command).isZero();
            assertThat(help.out()).as(command).contains("./ripcord " + command).doesNotContain("[INFO]");
        }
        assertThat(run("help", "convert").out()).isEqualTo(run("convert", "--help").out());
    }

    @Test
    void benchHelpListsEveryBenchOfTheCatalog() throws Exception {
        Result help = run("bench", "--help");

        assertThat(help.status()).isZero();
        List<String> names = Files.readAllLines(
                ROOT.resolve("ripcord-cli/src/main/resources/dev/ripcord/cli/bench/benches.txt"),
                StandardCharsets.UTF_8).stream()
                .filter(line -> !line.isBlank() && !line.startsWith("#"))
                .map(line -> line.split("\\s+")[0]).toList();
        assertThat(names).contains("load", "cancel", "gateway");
        for (String name : names) {
            assertThat(help.out()).containsPattern("(?m)^  " + name + " ");
        }
    }

    @Test
    void anUnknownCommandOrScriptOptionIsAnErrorWithASuggestion() throws Exception {
        Result command = run("tset");
        assertThat(command.status()).isEqualTo(2);
        assertThat(command.err()).contains("unknown command 'tset'; did you mean 'test'?");

        Result option = run("fetch-model", "--cahce-dir=/tmp/x");
        assertThat(option.status()).isEqualTo(2);
        assertThat(option.err()).isEqualTo("ripcord fetch-model: unknown option '--cahce-dir'; did you mean '--cache-dir'? "
                + "(./ripcord fetch-model --help)\n");
    }

    /**
     * Regression: {@code ./ripcord bench NAME --help} ran Maven for 20 s, then the bench said "unexpected argument".
     * Here the script runs in a copy of the repository that holds only the script and the files its help reads (no
     * {@code mvnw}, no sources), with a PATH of shell tools (no {@code java}, no {@code mvn}): any build or JVM start
     * fails there, so each of these answers is build-free.
     */
    @Test
    void everyCommandAndEveryBenchAnswersHelpWithoutMavenOrJava(@TempDir Path copy) throws Exception {
        for (Path file : helpFiles()) {
            Path target = copy.resolve(ROOT.relativize(file).toString());
            Files.createDirectories(target.getParent());
            Files.copy(file, target);
        }
        String path = shellToolsOnly(copy.resolve("bin"));
        List<String> commands = List.of("up", "fetch-model", "test", "build", "bench", "convert", "synth-model", "model-bench",
                "images", "compose", "hash-key", "audit", "cancels", "status", "java");
        for (String command : commands) {
            Result help = runIn(copy, path, command, "--help");
            assertThat(help.status()).as(command).isZero();
            assertThat(help.out()).as(command).contains("./ripcord ").contains(command);
            assertThat(help.err()).as(command).isEmpty();
        }
        for (String bench : benchNames()) {
            Result help = runIn(copy, path, "bench", bench, "--help");
            assertThat(help.status()).as(bench).isZero();
            assertThat(help.err()).as(bench).isEmpty();
            assertThat(help.out()).as(bench).isNotBlank();
        }
        assertThat(runIn(copy, path, "bench", "load", "--help").out().strip())
                .isEqualTo(dev.ripcord.stack.bench.BenchUsage.read(dev.ripcord.stack.bench.LoadBench.class));
        assertThat(copy.resolve("mvnw")).doesNotExist();
    }

    /** Regression: bench options were not checked, so {@code --client=5} (for --clients) was silently ignored. */
    @Test
    void aMistypedBenchOptionOrNameIsOneLineWithTheSharedSuggestionStyle() throws Exception {
        Result option = run("bench", "load", "--client=5");
        assertThat(option.status()).isEqualTo(2);
        assertThat(option.err()).isEqualTo(
                "ripcord bench load: unknown option '--client'; did you mean '--clients'? (./ripcord bench load --help)\n");
        assertThat(option.out()).isEmpty();

        Result far = run("bench", "storm", "--seed=1", "--frobnicate=2");
        assertThat(far.status()).isEqualTo(2);
        assertThat(far.err()).isEqualTo("ripcord bench storm: unknown option '--frobnicate' (./ripcord bench storm --help)\n");

        Result name = run("bench", "lod");
        assertThat(name.status()).isEqualTo(2);
        assertThat(name.err()).startsWith("ripcord bench: unknown bench 'lod'; did you mean 'load'? (");

        Result own = run("bench", "--dyr-run", "load");
        assertThat(own.status()).isEqualTo(2);
        assertThat(own.err()).startsWith("ripcord bench: unknown option '--dyr-run'; did you mean '--dry-run'? (");
    }

    /** What the script's help reads: itself, up's option file, the bench catalog and every bench's usage file. */
    private static List<Path> helpFiles() throws IOException {
        List<Path> files = new ArrayList<>(List.of(ROOT.resolve("ripcord"),
                ROOT.resolve("local-stack/src/main/resources/dev/ripcord/stack/up-options.txt"),
                ROOT.resolve("ripcord-cli/src/main/resources/dev/ripcord/cli/bench/benches.txt")));
        for (String module : List.of("local-stack", "cancel-events", "kv-transfer-lib", "inference-engine")) {
            try (var found = Files.find(ROOT.resolve(module).resolve("src/test/resources"), 10,
                    (file, attributes) -> file.getFileName().toString().endsWith(".usage.txt"))) {
                files.addAll(found.toList());
            }
        }
        return files;
    }

    /** A directory of links to the shell tools the script's help uses, and nothing else: a PATH without a JDK. */
    private static String shellToolsOnly(Path bin) throws IOException {
        Files.createDirectories(bin);
        for (String tool : List.of("bash", "awk", "sed", "grep", "tr", "cat", "dirname", "find", "head", "sort")) {
            for (String dir : List.of("/usr/bin", "/bin")) {
                Path real = Path.of(dir, tool);
                if (Files.isExecutable(real)) {
                    Files.createSymbolicLink(bin.resolve(tool), real.toRealPath());
                    break;
                }
            }
        }
        return bin.toString();
    }

    private static List<String> benchNames() throws IOException {
        return Files.readAllLines(ROOT.resolve("ripcord-cli/src/main/resources/dev/ripcord/cli/bench/benches.txt"),
                        StandardCharsets.UTF_8).stream()
                .filter(line -> !line.isBlank() && !line.startsWith("#"))
                .map(line -> line.split("\\s+")[0]).toList();
    }

    private static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("ripcord"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no ripcord script above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }
}
