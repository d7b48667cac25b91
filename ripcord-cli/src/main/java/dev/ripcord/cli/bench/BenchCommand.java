package dev.ripcord.cli.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ./ripcord bench NAME [args]}: builds the bench's module (and what it depends on) and resolves its classpath
 * in one Maven reactor run, then runs its main class with the arguments after the name, and exits with its status.
 * The benches are listed in {@link BenchCatalog} ({@code benches.txt}). Everything after NAME goes to the bench,
 * {@code --help} included.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, modelTransformer = BenchCommand.ArgsAfterName.class,
        usageHelpWidth = 140,
        description = {"Runs one of Ripcord's benchmarks without a hand-built classpath: Maven compiles the bench's "
                + "module and resolves its classpath in one reactor run, then the bench runs with the arguments "
                + "after its name.", "", "Benches:"},
        footer = {"", "Examples: ./ripcord bench load --clients=200; ./ripcord bench inference-engine -l"})
public final class BenchCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "NAME", description = "which bench (listed above)")
    String name;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "the bench's own arguments")
    List<String> args = new ArrayList<>();

    @Option(names = "--dry-run", description = "print the Maven and java commands instead of running them")
    boolean dryRun;

    @Option(names = "--jvm-flag", paramLabel = "FLAG",
            description = "an extra flag for the bench's JVM, e.g. --jvm-flag=-Xmx512m (repeatable; before NAME)")
    List<String> jvmFlags = new ArrayList<>();

    @Option(names = "--root", hidden = true, defaultValue = ".", description = "the repository root")
    Path root;

    @Override
    public Integer call() throws IOException, InterruptedException {
        BenchCatalog catalog = BenchCatalog.shipped();
        PrintWriter err = spec.commandLine().getErr();
        PrintWriter out = spec.commandLine().getOut();
        Bench bench = catalog.byName(name).orElse(null);
        if (bench == null) {
            err.println("ripcord bench: unknown bench '" + name + "'"
                    + catalog.didYouMean(name)
                    + " (benches: " + String.join(", ", catalog.names()) + ")");
            return 2;
        }
        Path repo = root.toAbsolutePath().normalize();
        List<String> maven = bench.mavenCommand(repo);
        Path classpathFile = repo.resolve(bench.module()).resolve(Bench.CLASSPATH_FILE);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        if (dryRun) {
            out.println(String.join(" ", maven));
            out.println(String.join(" ", bench.javaCommand(repo, java, jvmFlags, "$(cat " + classpathFile + ")", args)));
            out.flush();
            return 0;
        }
        if (!Files.isExecutable(repo.resolve("mvnw"))) {
            err.println("ripcord bench: no mvnw in " + repo + " (run it from the repository root: ./ripcord bench)");
            return 2;
        }
        int built = new ProcessBuilder(maven).directory(repo.toFile()).inheritIO().start().waitFor();
        if (built != 0) {
            err.println("ripcord bench: the Maven build of " + bench.module() + " failed (status " + built + ")");
            return built;
        }
        String classpath = Files.readString(classpathFile, StandardCharsets.UTF_8);
        return new ProcessBuilder(bench.javaCommand(repo, java, jvmFlags, classpath, args)).directory(repo.toFile())
                .inheritIO().start().waitFor();
    }

    /**
     * Everything after NAME is the bench's ({@code ./ripcord bench load --clients=9} must not be read as an option of
     * this command), and the usage lists the benches.
     */
    static final class ArgsAfterName implements CommandLine.IModelTransformer {
        @Override
        public CommandSpec transform(CommandSpec spec) {
            spec.parser().stopAtPositional(true);
            List<String> lines = new ArrayList<>(List.of(spec.usageMessage().description()));
            for (Bench bench : BenchCatalog.shipped().all()) {
                lines.add(String.format("  %-18s %s", bench.name(), bench.description()));
            }
            spec.usageMessage().description(lines.toArray(String[]::new));
            return spec;
        }
    }
}
