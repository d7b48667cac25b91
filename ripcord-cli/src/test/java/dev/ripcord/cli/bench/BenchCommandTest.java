package dev.ripcord.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import dev.ripcord.cli.RipcordCli;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code ./ripcord bench}: each name maps to a main class that exists, built and resolved in one Maven run. */
class BenchCommandTest {

    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    record Run(int status, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new BenchCommand());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void everyBenchNamesAMainClassThatExistsInItsModule() {
        List<Bench> benches = BenchCatalog.shipped().all();

        assertThat(benches).extracting(Bench::name).contains("load", "cancel", "gateway", "transfer");
        for (Bench bench : benches) {
            Path module = REPO.resolve(bench.module());
            assertThat(module.resolve("pom.xml")).as(bench.name()).isRegularFile();
            if (bench.mainClass().startsWith("dev.ripcord.")) {
                String source = bench.mainClass().replace('.', '/') + ".java";
                assertThat(Files.isRegularFile(module.resolve("src/test/java").resolve(source))
                        || Files.isRegularFile(module.resolve("src/main/java").resolve(source)))
                        .as("%s: %s in %s", bench.name(), bench.mainClass(), bench.module()).isTrue();
            } else {
                assertThat(bench.mainClass()).isEqualTo("org.openjdk.jmh.Main");
            }
        }
    }

    @Test
    void aBenchIsBuiltAndResolvedInOneReactorRunThenRunWithTheArgumentsAfterItsName() {
        Run run = run("--dry-run", "--root=" + REPO, "--jvm-flag=-Xmx512m", "load", "--clients=3", "--help");

        assertThat(run.status()).isZero();
        List<String> lines = run.out().lines().toList();
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo(REPO.resolve("mvnw") + " -B -ntp -q -DskipTests -pl local-stack -am "
                + "package dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath");
        assertThat(lines.get(1))
                .contains("--add-modules jdk.incubator.vector")
                .contains("--sun-misc-unsafe-memory-access=allow -Xmx512m -cp ")
                .contains(" -cp " + REPO.resolve("local-stack/target/test-classes") + ":"
                        + REPO.resolve("local-stack/target/classes") + ":$(cat "
                        + REPO.resolve("local-stack/target/bench.classpath") + ")")
                .endsWith(" dev.ripcord.stack.bench.LoadBench --clients=3 --help");
    }

    @Test
    void anUnknownBenchIsAUsageErrorThatSuggestsTheNearestName() {
        Run run = run("--dry-run", "lod");

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).contains("unknown bench 'lod'; did you mean 'load'?");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void helpListsEveryBench() {
        Run run = run("--help");

        assertThat(run.status()).isZero();
        for (Bench bench : BenchCatalog.shipped().all()) {
            assertThat(run.out()).contains(bench.name() + " ").contains(bench.description());
        }
        assertThat(RipcordCli.run("bench", "--help")).isZero();
    }

    @Test
    void aCatalogLineWithoutAllColumnsOrAPhaseOtherThanTheTwoIsRejected() {
        assertThatThrownBy(() -> BenchCatalog.parse("load local-stack package\n"))
                .hasMessageContaining("expected name, module, phase, main class and a description");
        assertThatThrownBy(() -> BenchCatalog.parse("load local-stack verify a.B runs it\n"))
                .hasMessageContaining("phase must be test-compile or package");
        assertThatThrownBy(() -> BenchCatalog.parse("a m package a.B x\na m package a.B y\n"))
                .hasMessageContaining("listed twice");
    }
}
