package dev.ripcord.stack.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The docs' commands need only the JDK (through {@code ./ripcord}), curl and a POSIX shell: no python, jq or kcat.
 * Kafka is reached with {@code ./ripcord cancels}.
 */
class DemosNeedOnlyJdkAndCurlTest {

    /**
     * A tool at the start of a command (line start, after a pipe, {@code $(}, {@code &&} or {@code ;}), or a Python
     * script run by its path (a recipe once ran {@code ../shared/tools/synth-llama2c.py} and passed this check only
     * because the word {@code python3} was not on the line).
     */
    private static final Pattern OTHER_TOOL = Pattern.compile(
            "(?:^|[|;&(]\\s*|\\$\\(\\s*)(python3?|jq|kcat|\\S+\\.py)(?:\\s|$)");

    @Test
    void noDocCommandNeedsPythonJqOrKcat() throws IOException {
        Path root = RepositoryFiles.root();
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> files = Files.list(root.resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        List<String> found = new ArrayList<>();
        for (Path doc : docs) {
            List<String> lines = Files.readAllLines(doc);
            for (int i = 0; i < lines.size(); i++) {
                String command = lines.get(i).strip();
                var m = OTHER_TOOL.matcher(command);
                if (m.find()) {
                    found.add(root.relativize(doc) + ":" + (i + 1) + ": " + command);
                }
            }
        }
        assertThat(found).isEmpty();
    }
}
