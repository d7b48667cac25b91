package dev.ripcord.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No test in any module skips itself silently: every way a JUnit test can end without running its assertions must
 * carry a reason that shows in the test report, where whoever reads a green build sees what did not run.
 *
 * <p>Checked in every {@code src/test/java} of the repository (comments and string literals ignored):
 * <ul>
 *   <li>{@code assumeTrue}/{@code assumeFalse} pass a message (their last argument); {@code assumingThat} is not
 *       used (it skips part of a test with no trace at all);</li>
 *   <li>{@code @Disabled} says why ({@code @Disabled("...")});</li>
 *   <li>the conditional annotations ({@code @EnabledOnOs}, {@code @EnabledIf}, {@code @DisabledIfEnvironmentVariable}
 *       and the rest) set {@code disabledReason};</li>
 *   <li>{@code @Testcontainers(disabledWithoutDocker = true)} is not used: its reason does not say what is lost;
 *       a suite that needs Docker says so with {@code @EnabledIf(..., disabledReason = "...")};</li>
 *   <li>no {@code @Test} method returns early ({@code return;} outside a lambda or a local class): a test that
 *       returns before its assertions passes without testing.</li>
 * </ul>
 */
class NoSilentSkipsTest {

    private static final Pattern ASSUMPTION = Pattern.compile("\\b(assumeTrue|assumeFalse)\\s*\\(");
    private static final Pattern DISABLED = Pattern.compile("@Disabled\\b(?!\\w)\\s*(\\()?");
    private static final Pattern CONDITION = Pattern.compile(
            "@(Enabled|Disabled)(OnOs|OnJre|ForJreRange|IfSystemProperty|IfSystemProperties|IfEnvironmentVariable"
                    + "|IfEnvironmentVariables|If|InNativeImage)\\b\\s*(\\()?");
    private static final Pattern TEST_METHOD = Pattern.compile(
            "@(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\\b[^{;]*?\\)\\s*(throws[^{]*)?\\{");

    @Test
    void everySkipInEveryModulesTestsCarriesAReasonAndNoTestReturnsEarly() {
        List<Path> sources = testSources();
        List<String> problems = new ArrayList<>();
        for (Path file : sources) {
            String code = stripCommentsAndStrings(read(file));
            String name = Repo.root().relativize(file).toString();
            Matcher m = ASSUMPTION.matcher(code);
            while (m.find()) {
                String args = arguments(code, m.end() - 1);
                if (topLevelCommas(args) == 0) {
                    problems.add(name + ": " + m.group(1) + "(...) without a message, at line " + line(code, m.start()));
                }
            }
            if (code.contains("assumingThat(")) {
                problems.add(name + ": assumingThat skips part of a test without a trace");
            }
            m = DISABLED.matcher(code);
            while (m.find()) {
                if (m.group(1) == null) {
                    problems.add(name + ": @Disabled without a reason, at line " + line(code, m.start()));
                }
            }
            m = CONDITION.matcher(code);
            while (m.find()) {
                String args = m.group(3) == null ? "" : arguments(code, m.end() - 1);
                if (!args.contains("disabledReason")) {
                    problems.add(name + ": @" + m.group(1) + m.group(2) + " without disabledReason, at line "
                            + line(code, m.start()));
                }
            }
            if (code.matches("(?s).*disabledWithoutDocker\\s*=\\s*true.*")) {
                problems.add(name + ": @Testcontainers(disabledWithoutDocker = true) skips without saying what is"
                        + " lost; use @EnabledIf(..., disabledReason = \"...\")");
            }
            m = TEST_METHOD.matcher(code);
            while (m.find()) {
                int earlyReturn = earlyReturn(code, m.end() - 1);
                if (earlyReturn >= 0) {
                    problems.add(name + ": a test returns early, at line " + line(code, earlyReturn));
                }
            }
        }
        assertThat(sources).as("test sources found under %s", Repo.root()).hasSizeGreaterThan(50);
        assertThat(problems).as("tests that can skip without a reason in the report").isEmpty();
    }

    @Test
    void theCheckItselfSeesEachKindOfSilentSkip() {
        String code = stripCommentsAndStrings("""
                class X {
                    @Test void a() { assumeTrue(docker()); }
                    @Test void b() { if (x) return; run(() -> { return; }); }
                    @Disabled @Test void c() { }
                    @EnabledOnOs(OS.LINUX) @Test void d() { }
                    @Test void e() { assumeTrue(docker(), "no Docker engine"); } // return;
                }
                """);
        assertThat(topLevelCommas(arguments(code, code.indexOf("assumeTrue(") + "assumeTrue".length()))).isZero();
        assertThat(topLevelCommas(arguments(code, code.lastIndexOf("assumeTrue(") + "assumeTrue".length())))
                .isEqualTo(1);
        Matcher test = TEST_METHOD.matcher(code);
        List<Integer> returns = new ArrayList<>();
        while (test.find()) {
            returns.add(earlyReturn(code, test.end() - 1));
        }
        assertThat(returns).hasSize(5);
        assertThat(returns.get(1)).as("b returns early").isPositive();
        assertThat(returns.stream().filter(r -> r >= 0)).as("only b: a lambda's return is its own").hasSize(1);
        Matcher disabled = DISABLED.matcher(code);
        assertThat(disabled.find() && disabled.group(1) == null).isTrue();
        Matcher condition = CONDITION.matcher(code);
        assertThat(condition.find()).isTrue();
        assertThat(arguments(code, condition.end() - 1)).doesNotContain("disabledReason");
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static List<Path> testSources() {
        try (Stream<Path> files = Files.walk(Repo.root())) {
            return files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> p.toString().contains("/src/test/java/"))
                    .filter(p -> !p.toString().contains("/target/") && !p.toString().contains("/.git/"))
                    .filter(p -> !p.getFileName().toString().equals("NoSilentSkipsTest.java"))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The code with comments, string and char literals and text blocks blanked (newlines kept, for line numbers). */
    static String stripCommentsAndStrings(String code) {
        StringBuilder out = new StringBuilder(code.length());
        int i = 0;
        while (i < code.length()) {
            char c = code.charAt(i);
            if (code.startsWith("//", i)) {
                while (i < code.length() && code.charAt(i) != '\n') {
                    i++;
                }
            } else if (code.startsWith("/*", i)) {
                int end = code.indexOf("*/", i + 2);
                end = end < 0 ? code.length() : end + 2;
                blank(code, i, end, out);
                i = end;
            } else if (code.startsWith("\"\"\"", i)) {
                int end = code.indexOf("\"\"\"", i + 3);
                end = end < 0 ? code.length() : end + 3;
                out.append("\"\"");
                blank(code, i + 2, end, out);
                i = end;
            } else if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < code.length() && code.charAt(j) != c && code.charAt(j) != '\n') {
                    j += code.charAt(j) == '\\' ? 2 : 1;
                }
                out.append(c).append(c);
                i = Math.min(j + 1, code.length());
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static void blank(String code, int from, int to, StringBuilder out) {
        for (int k = from; k < to; k++) {
            if (code.charAt(k) == '\n') {
                out.append('\n');
            }
        }
    }

    /** The text between the parenthesis at {@code open} and its match. */
    static String arguments(String code, int open) {
        int depth = 0;
        for (int i = open; i < code.length(); i++) {
            char c = code.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                return code.substring(open + 1, i);
            }
        }
        return code.substring(open + 1);
    }

    static int topLevelCommas(String args) {
        int depth = 0;
        int commas = 0;
        for (char c : args.toCharArray()) {
            switch (c) {
                case '(', '[', '{', '<' -> depth++;
                case ')', ']', '}', '>' -> depth--;
                case ',' -> commas += depth == 0 ? 1 : 0;
                default -> { }
            }
        }
        return commas;
    }

    /**
     * The offset of a {@code return} that ends the test method whose body opens at {@code open}, or -1: one not
     * inside a lambda body or a class body nested in the method.
     */
    static int earlyReturn(String code, int open) {
        Deque<Boolean> ownBlocks = new ArrayDeque<>(); // per open brace: does a return in it end the test?
        ownBlocks.push(true);
        for (int i = open + 1; i < code.length() && !ownBlocks.isEmpty(); i++) {
            char c = code.charAt(i);
            if (c == '{') {
                String before = code.substring(Math.max(0, i - 200), i).stripTrailing();
                boolean foreign = before.endsWith("->") || isClassBody(before);
                ownBlocks.push(ownBlocks.peek() && !foreign);
            } else if (c == '}') {
                ownBlocks.pop();
            } else if (code.startsWith("return", i) && !Character.isJavaIdentifierPart(code.charAt(i - 1))
                    && !Character.isJavaIdentifierPart(code.charAt(i + 6)) && ownBlocks.peek()) {
                return i;
            }
        }
        return -1;
    }

    private static boolean isClassBody(String before) {
        return before.matches("(?s).*\\bnew\\s+[\\w.<>, ?]+\\([^;{}]*\\)$")
                || before.matches("(?s).*\\b(class|interface|enum|record)\\s+\\w+[^;{}]*$");
    }

    private static int line(String code, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) {
            if (code.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }
}
