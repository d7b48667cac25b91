package dev.ripcord.stack;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which lines of a service's output {@code ./ripcord up} shows on its console; every line goes to the service's log
 * file either way. Quiet (the default): warnings and errors only, so that a real warning is not buried under the
 * start-up and warm-up INFO lines: a log entry at WARN or ERROR with the lines that continue it (a stack trace), and
 * a JVM's own warning. Verbose ({@code --verbose}): every line, as it comes.
 *
 * <p>Known harmless JVM output ({@link #HARMLESS}) is not shown in quiet mode: it is not a problem, and a line such
 * as {@code [error][aot] archivedBootLayer not available, disabling full module graph} (the AOT cache's assembly,
 * with {@code --add-modules jdk.incubator.vector}) reads like one. One filter per process: it remembers whether the
 * entry being continued was shown. Not thread-safe; the process's relay thread owns it.
 */
final class ConsoleFilter {

    /** A Spring Boot log entry: ISO time, then the level ({@code logging.pattern.level} starts with {@code %5p}). */
    private static final Pattern ENTRY =
            Pattern.compile("^\\d{4}-\\d\\d-\\d\\dT\\S+\\s+(TRACE|DEBUG|INFO|WARN|ERROR)\\b");
    /** A line that is not a log entry but says something went wrong: a JVM warning, an exception. */
    private static final Pattern ALARM = Pattern.compile("(?i)\\bwarning\\b|\\berror\\b|exception\\b");
    /** JVM output that is expected with the services' flags and means nothing is wrong. */
    static final List<Pattern> HARMLESS = List.of(
            Pattern.compile("^WARNING: Using incubator modules"), // --add-modules jdk.incubator.vector
            Pattern.compile("\\[aot\\].*full module graph"), // the AOT cache without the archived module graph
            Pattern.compile("\\[aot\\].*processing the AOT configuration file"), // the same, its first line
            Pattern.compile("Sharing is only supported for boot loader classes")); // CDS with an appended classpath

    private final boolean verbose;
    private boolean continuing;

    ConsoleFilter(boolean verbose) {
        this.verbose = verbose;
    }

    /** An empty trace field as Spring Boot pads it ({@code [<49 spaces>] }): 51 columns of nothing. */
    private static final Pattern EMPTY_PADDED_FIELD = Pattern.compile("\\[ {20,}\\] ");

    /**
     * {@code line} as the console shows it: without the empty, padded trace field of a log entry outside a trace
     * (the log file keeps the line as written).
     */
    static String compact(String line) {
        return EMPTY_PADDED_FIELD.matcher(line).replaceFirst("");
    }

    /** Whether {@code line}, the next line of the process's output, goes to the console. */
    boolean show(String line) {
        if (verbose) {
            return true;
        }
        Matcher entry = ENTRY.matcher(line);
        if (entry.find()) {
            continuing = entry.group(1).equals("WARN") || entry.group(1).equals("ERROR");
            return continuing;
        }
        for (Pattern harmless : HARMLESS) {
            if (harmless.matcher(line).find()) {
                return false;
            }
        }
        return continuing || ALARM.matcher(line).find();
    }
}
