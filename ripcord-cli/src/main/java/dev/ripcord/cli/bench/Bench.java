package dev.ripcord.cli.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One bench {@code ./ripcord bench NAME} runs: a main class in a module's test (or main) classes, run on that
 * module's test-scope classpath as Maven resolves it.
 *
 * @param name        what the user types ({@code load}, {@code cancel}, ...)
 * @param module      the Maven module whose classes and test-scope dependencies make the classpath
 * @param phase       the Maven phase that must run first: {@code test-compile}, or {@code package} when the bench
 *                    starts a stack and needs the services' executable jars
 * @param mainClass   the class whose {@code main} runs
 * @param description one line on what it measures
 */
public record Bench(String name, String module, String phase, String mainClass, String description) {

    /** The flags every Ripcord JVM runs with (the engine's Vector API, FFM downcalls, Netty's Unsafe use). */
    static final List<String> JVM_FLAGS = List.of("--add-modules", "jdk.incubator.vector",
            "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow");

    /** Where the Maven run leaves the module's classpath (one line, path-separated). */
    static final String CLASSPATH_FILE = "target/bench.classpath";

    public Bench {
        if (!List.of("test-compile", "package").contains(phase)) {
            throw new IllegalArgumentException("bench %s: phase must be test-compile or package, got %s"
                    .formatted(name, phase));
        }
    }

    /**
     * One reactor run that builds the module and what it depends on ({@code -am}) and writes its test-scope
     * classpath: in a reactor run the sibling modules resolve to their {@code target/} output, never to a stale
     * or missing artifact in the local repository. Tests are compiled, not run.
     */
    List<String> mavenCommand(Path root) {
        return List.of(root.resolve("mvnw").toString(), "-B", "-ntp", "-q", "-DskipTests", "-pl", module, "-am",
                phase, "dependency:build-classpath", "-Dmdep.includeScope=test",
                "-Dmdep.outputFile=" + CLASSPATH_FILE);
    }

    /** The bench's JVM: the module's test and main classes, then the classpath Maven wrote. */
    List<String> javaCommand(Path root, String javaBinary, List<String> jvmFlags, String resolvedClasspath,
                             List<String> args) {
        Path target = root.resolve(module).resolve("target");
        List<String> command = new ArrayList<>();
        command.add(javaBinary);
        command.addAll(JVM_FLAGS);
        command.addAll(jvmFlags);
        command.add("-cp");
        command.add(String.join(java.io.File.pathSeparator, target.resolve("test-classes").toString(),
                target.resolve("classes").toString(), resolvedClasspath.strip()));
        command.add(mainClass);
        command.addAll(args);
        return command;
    }
}
