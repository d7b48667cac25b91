package dev.ripcord.cli.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.ripcord.protocol.Suggestions;

/**
 * The benches, read from {@code benches.txt} next to this class: one line per bench, so adding one is adding a line.
 * The {@code ripcord} script reads the same file for {@code ./ripcord bench --help}, without building anything.
 * Line format: {@code name module phase mainClass description...}; {@code #} starts a comment line.
 */
public final class BenchCatalog {

    private final Map<String, Bench> benches;

    private BenchCatalog(Map<String, Bench> benches) {
        this.benches = benches;
    }

    /** The catalog shipped in this jar. */
    public static BenchCatalog shipped() {
        try (InputStream in = BenchCatalog.class.getResourceAsStream("benches.txt")) {
            if (in == null) {
                throw new IllegalStateException("benches.txt is missing from the classpath");
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static BenchCatalog parse(String text) {
        Map<String, Bench> benches = new LinkedHashMap<>();
        for (String line : text.lines().toList()) {
            if (line.isBlank() || line.stripLeading().startsWith("#")) {
                continue;
            }
            String[] f = line.strip().split("\\s+", 5);
            if (f.length < 5) {
                throw new IllegalArgumentException("benches.txt: expected name, module, phase, main class and a "
                        + "description, got '" + line + "'");
            }
            Bench bench = new Bench(f[0], f[1], f[2], f[3], f[4]);
            if (benches.putIfAbsent(bench.name(), bench) != null) {
                throw new IllegalArgumentException("benches.txt: bench '" + bench.name() + "' listed twice");
            }
        }
        return new BenchCatalog(java.util.Collections.unmodifiableMap(benches));
    }

    public List<Bench> all() {
        return List.copyOf(benches.values());
    }

    public Optional<Bench> byName(String name) {
        return Optional.ofNullable(benches.get(name));
    }

    /** {@code "; did you mean 'NAME'?"} for the bench nearest to {@code typed}, or {@code ""}. */
    public String didYouMean(String typed) {
        return Suggestions.didYouMean(typed, benches.keySet(), "");
    }

    List<String> names() {
        return new ArrayList<>(benches.keySet());
    }
}
