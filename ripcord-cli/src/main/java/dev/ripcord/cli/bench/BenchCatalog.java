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

    /** The bench name nearest to {@code typed} (at most 2 edits, or a third of its length), for "did you mean". */
    public Optional<String> nearest(String typed) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String name : benches.keySet()) {
            int d = distance(typed, name);
            if (d < bestDistance) {
                best = name;
                bestDistance = d;
            }
        }
        return bestDistance <= Math.max(2, typed.length() / 3) ? Optional.ofNullable(best) : Optional.empty();
    }

    /** Optimal string alignment distance (edits and adjacent transpositions), as the script's {@code suggest}. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }

    List<String> names() {
        return new ArrayList<>(benches.keySet());
    }
}
