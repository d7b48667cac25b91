package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Keeps the two test tiers apart (README, Developing), in every module. A test class that starts a local stack (a
 * broker and the services as child JVMs, through {@link LocalStackTest} or {@code LocalStack.start}) or any other
 * child JVM is a stack test and must be named {@code *IT}: Failsafe runs it after the services' jars are packaged,
 * and {@code ./ripcord test --fast} leaves it out. Named {@code *Test}, Surefire would run it in the unit tier,
 * minutes long, and in a build that stops at {@code test} before the jars it starts exist. Checked on the sources,
 * comments left out, like the other repository checks in this module.
 */
class StackTestsAreNamedItTest {

    /** Declares a JUnit test. */
    private static final Pattern DECLARES_TESTS =
            Pattern.compile("@(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\\b");
    /** Starts a stack or a child JVM. */
    private static final Pattern STARTS_PROCESSES = Pattern.compile(
            "@LocalStackTest\\b|\\bLocalStack\\.start\\(|\\bStackExtension\\.stack\\(|\\bProcessBuilder\\b");
    private static final Pattern COMMENTS = Pattern.compile("/\\*.*?\\*/|//[^\\n]*", Pattern.DOTALL);

    @Test
    void everyTestClassThatStartsAStackOrChildJvmIsNamedIT() {
        List<Path> stackTests = testSources().filter(StackTestsAreNamedItTest::startsProcesses).toList();

        assertThat(stackTests).as("the scan finds the stack tests at all").extracting(StackTestsAreNamedItTest::name)
                .contains("AuthenticationIT", "CancelPhasesIT", "KafkaUnavailableIT", "CrossProcessIT");
        assertThat(stackTests).allSatisfy(file -> assertThat(name(file))
                .as("%s starts a stack or a child JVM: a stack test, so *IT (run by failsafe)", file)
                .endsWith("IT"));
    }

    /** The test sources of every module that declare a test. */
    private static Stream<Path> testSources() {
        try (Stream<Path> modules = Files.list(TestStacks.repositoryRoot())) {
            return modules.map(module -> module.resolve("src/test/java")).filter(Files::isDirectory)
                    .flatMap(StackTestsAreNamedItTest::javaFiles)
                    .toList().stream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Stream<Path> javaFiles(Path sources) {
        try (Stream<Path> files = Files.walk(sources)) {
            return files.filter(f -> f.toString().endsWith(".java"))
                    // this class names the markers in its patterns, and starts nothing
                    .filter(f -> !name(f).equals(StackTestsAreNamedItTest.class.getSimpleName()))
                    .filter(f -> DECLARES_TESTS.matcher(code(f)).find())
                    .toList().stream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean startsProcesses(Path file) {
        return STARTS_PROCESSES.matcher(code(file)).find();
    }

    private static String code(Path file) {
        try {
            return COMMENTS.matcher(Files.readString(file)).replaceAll(" ");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String name(Path file) {
        String name = file.getFileName().toString();
        return name.substring(0, name.length() - ".java".length());
    }
}
