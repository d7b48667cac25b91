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
        List<String> command = new ArrayList<>(List.of("bash", ROOT.resolve("ripcord").toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("ripcord-out", ".txt");
        Path err = Files.createTempFile("ripcord-err", ".txt");
        try {
            Process process = new ProcessBuilder(command).directory(ROOT.toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
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
        assertThat(run("up", "--modle=x").err()).contains("did you mean --model?");
    }

    @Test
    void everyCommandAnswersHelpWithoutBuilding() throws Exception {
        Result overview = run("--help");
        assertThat(overview.status()).isZero();
        for (String command : List.of("up", "fetch-model", "test", "build", "bench", "convert", "model-bench",
                "images", "hash-key", "java")) {
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
        assertThat(option.err()).contains("unknown option --cahce-dir; did you mean --cache-dir?");
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
