package dev.ripcord.stack.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The repository's sources and docs as these tests read them: files, not a running stack. */
final class RepositoryFiles {

    /** A meter name as the first argument of a Micrometer builder or registry shortcut. */
    private static final Pattern METER = Pattern.compile(
            "(?:\\.builder|\\.counter|\\.timer|\\.gauge|\\.summary|\\.more\\(\\)\\.\\w+)\\(\\s*\"(ripcord\\.[A-Za-z0-9._-]+)\"");
    /** A backticked Micrometer name at the start of a table row in metrics.md. */
    private static final Pattern DOCUMENTED_METER = Pattern.compile("^\\| `(ripcord\\.[A-Za-z0-9._-]+)` \\|",
            Pattern.MULTILINE);
    /** A backticked Prometheus name anywhere in metrics.md. */
    private static final Pattern DOCUMENTED_SERIES = Pattern.compile("`([a-z][a-z0-9_]*_[a-z0-9_]+)`");

    private RepositoryFiles() {
    }

    /** The repository root: the first directory up from the working directory that has docs/metrics.md. */
    static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("docs/metrics.md"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no docs/metrics.md above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }

    static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every {@code ripcord.*} meter name registered in a module's main sources. */
    static Set<String> metersInSource(Path root) {
        Set<String> names = new TreeSet<>();
        for (Path file : mainJavaFiles(root)) {
            Matcher m = METER.matcher(read(file));
            while (m.find()) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    static Set<String> documentedMeters(Path root) {
        return all(DOCUMENTED_METER, read(root.resolve("docs/metrics.md")));
    }

    static Set<String> documentedSeries(Path root) {
        return all(DOCUMENTED_SERIES, read(root.resolve("docs/metrics.md")));
    }

    private static Set<String> all(Pattern pattern, String text) {
        Set<String> found = new TreeSet<>();
        Matcher m = pattern.matcher(text);
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }

    private static List<Path> mainJavaFiles(Path root) {
        try (Stream<Path> files = Files.walk(root, 12)) {
            return files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> root.relativize(p).toString().replace('\\', '/').matches("[^/]+/src/main/java/.*"))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
