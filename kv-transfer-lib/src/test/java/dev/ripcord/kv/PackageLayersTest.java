package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The folder tree is the architecture: the module's packages form layers, and an arrow (an import, or a
 * fully-qualified name in code) may only point from a package to one in a lower layer — never back up, never
 * sideways to a sibling, never round in a cycle. Read from the sources (not the bytecode), so an unused import
 * counts too: a reader sees it as an arrow.
 *
 * <p>The layers, top to bottom (docs/kv-transfer.md, "Package map"):
 * <ol>
 *   <li>{@code kv.agent}: the agent implementation, which wires everything below;</li>
 *   <li>{@code kv.transport.tcp}, {@code kv.transport.shm}: the two transports, independent of each other;</li>
 *   <li>{@code kv.session}: the session lifecycle (state machines, write op, fences, drain watchdog, regions);</li>
 *   <li>{@code kv} (the API), {@code kv.wire} (the frame format), {@code kv.shm} (the shared-memory files and
 *   fence words): the ground every layer stands on, independent of each other.</li>
 * </ol>
 * A new package fails this test until it is given a layer here.
 */
class PackageLayersTest {
    static final String ROOT = "dev.ripcord.kv";
    static final List<Set<String>> LAYERS = List.of(
            Set.of(ROOT + ".agent"),
            Set.of(ROOT + ".transport.tcp", ROOT + ".transport.shm"),
            Set.of(ROOT + ".session"),
            Set.of(ROOT, ROOT + ".wire", ROOT + ".shm"));

    static final Path SOURCES = Path.of("src/main/java");

    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    private static final Pattern IMPORT =
            Pattern.compile("^import\\s+(?:static\\s+)?([\\w.]+?)(?:\\.\\*)?\\s*;", Pattern.MULTILINE);
    /** A fully-qualified type name in code: lower-case package segments, then a capitalised type. */
    private static final Pattern QUALIFIED = Pattern.compile("(?<![\\w.])(dev\\.ripcord\\.kv(?:\\.[a-z]\\w*)*)\\.[A-Z]");
    private static final Pattern COMMENT = Pattern.compile("/\\*.*?\\*/|//[^\\n]*", Pattern.DOTALL);
    private static final Pattern STRING = Pattern.compile("\"(?:\\\\.|[^\"\\\\])*\"");

    /**
     * One arrow: {@code from} (a file of package {@code fromPackage}) depends on package {@code to}; one from each
     * file to its own package too, so that a package that points nowhere is still a node.
     */
    record Arrow(String fromPackage, Path from, String to) {
    }

    @Test
    void theSourcesAreReadAndEveryPackageHasALayer() {
        Map<String, Set<String>> graph = graph(arrows(SOURCES));
        assertThat(graph.keySet()).as("packages found under %s", SOURCES.toAbsolutePath())
                .containsAll(LAYERS.stream().flatMap(Set::stream).toList());
        assertThat(graph.keySet()).as("every package of the module is given a layer in this test")
                .allMatch(p -> layerOf(p) >= 0);
        // the check sees real arrows, not an empty graph
        assertThat(graph.get(ROOT + ".agent")).contains(ROOT + ".session", ROOT + ".transport.tcp", ROOT);
        assertThat(graph.get(ROOT + ".transport.tcp")).contains(ROOT + ".session", ROOT + ".wire");
    }

    @Test
    void noArrowPointsBackUpOrSideways() {
        List<String> violations = upwardArrows(arrows(SOURCES));
        assertThat(violations).as("imports from a layer to itself or to a higher one (top first: %s)", LAYERS)
                .isEmpty();
    }

    @Test
    void thePackagesFormNoCycle() {
        assertThat(cycles(graph(arrows(SOURCES)))).as("package cycles").isEmpty();
    }

    /** Arrows that do not point strictly down, one line each. */
    static List<String> upwardArrows(List<Arrow> arrows) {
        List<String> out = new ArrayList<>();
        for (Arrow a : arrows) {
            int from = layerOf(a.fromPackage());
            int to = layerOf(a.to());
            if (from < 0 || to < 0) {
                continue; // reported by theSourcesAreReadAndEveryPackageHasALayer
            }
            if (!a.to().equals(a.fromPackage()) && to <= from) {
                out.add(a.from() + ": " + a.fromPackage() + " (layer " + from + ") -> " + a.to() + " (layer " + to
                        + ")");
            }
        }
        return out;
    }

    /** Every cycle's packages (strongly connected components of more than one package, or a self-loop). */
    static List<List<String>> cycles(Map<String, Set<String>> graph) {
        // Tarjan's strongly connected components; recursion is fine for a handful of packages.
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<List<String>> out = new ArrayList<>();
        int[] next = {0};
        for (String v : graph.keySet()) {
            if (!index.containsKey(v)) {
                strongConnect(v, graph, index, low, stack, onStack, next, out);
            }
        }
        return out;
    }

    private static void strongConnect(String v, Map<String, Set<String>> graph, Map<String, Integer> index,
                                      Map<String, Integer> low, Deque<String> stack, Set<String> onStack,
                                      int[] next, List<List<String>> out) {
        index.put(v, next[0]);
        low.put(v, next[0]);
        next[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : graph.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                strongConnect(w, graph, index, low, stack, onStack, next, out);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            List<String> component = new ArrayList<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1 || graph.getOrDefault(v, Set.of()).contains(v)) {
                out.add(component);
            }
        }
    }

    static int layerOf(String pkg) {
        for (int i = 0; i < LAYERS.size(); i++) {
            if (LAYERS.get(i).contains(pkg)) {
                return i;
            }
        }
        return -1;
    }

    /** Package to the other packages of the module it points at. */
    static Map<String, Set<String>> graph(List<Arrow> arrows) {
        Map<String, Set<String>> graph = new TreeMap<>();
        for (Arrow a : arrows) {
            graph.computeIfAbsent(a.fromPackage(), k -> new TreeSet<>());
            graph.computeIfAbsent(a.to(), k -> new TreeSet<>());
            if (!a.to().equals(a.fromPackage())) {
                graph.get(a.fromPackage()).add(a.to());
            }
        }
        return graph;
    }

    /** Every arrow into the module's packages, from each source file under {@code root}. */
    static List<Arrow> arrows(Path root) {
        try (Stream<Path> files = Files.walk(root)) {
            List<Arrow> out = new ArrayList<>();
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                out.addAll(arrows(file, Files.readString(file)));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Arrow> arrows(Path file, String source) {
        Matcher pm = PACKAGE.matcher(source);
        if (!pm.find()) {
            return List.of(new Arrow("(no package)", file, "(no package)"));
        }
        String pkg = pm.group(1);
        Set<String> targets = new TreeSet<>();
        targets.add(pkg); // every file makes its package a node, even one that points nowhere
        Matcher im = IMPORT.matcher(source);
        while (im.find()) {
            targets.add(packageOf(im.group(1)));
        }
        String code = STRING.matcher(COMMENT.matcher(source).replaceAll(" ")).replaceAll("\"\"");
        Matcher qm = QUALIFIED.matcher(code.replaceAll("(?m)^(package|import)\\s.*$", ""));
        while (qm.find()) {
            targets.add(qm.group(1));
        }
        List<Arrow> out = new ArrayList<>();
        for (String t : targets) {
            if (t.equals(ROOT) || t.startsWith(ROOT + ".")) {
                out.add(new Arrow(pkg, file, t));
            }
        }
        return out;
    }

    /** {@code a.b.Outer} (an import of a nested type) names package {@code a.b}: strip capitalised segments. */
    private static String packageOf(String qualifier) {
        String[] parts = qualifier.split("\\.");
        StringBuilder sb = new StringBuilder();
        for (String p : parts) {
            if (!p.isEmpty() && Character.isUpperCase(p.charAt(0))) {
                break;
            }
            if (!sb.isEmpty()) {
                sb.append('.');
            }
            sb.append(p);
        }
        return sb.toString();
    }
}
