package dev.ripcord.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * docs/lifecycles.md's state tables are the enums' transition tables: each table, marked
 * {@code <!-- state-table: <enum class> -->}, lists every state as a row, every state that can be entered as a
 * column, and a ✓ exactly where the enum allows the transition. A change to either that the other does not follow
 * fails here.
 */
class LifecycleDocsTest {

    private static final Pattern MARKER = Pattern.compile("<!-- state-table: ([\\w.]+) -->");
    private static final Set<String> EXPECTED = Set.of("dev.ripcord.worker.job.JobState",
            "dev.ripcord.kv.SessionState", "dev.ripcord.cancel.RegistrationState");

    @Test
    void everyStateTableInLifecyclesMdMatchesItsEnum() throws Exception {
        String doc = Repo.read("docs/lifecycles.md");
        Matcher m = MARKER.matcher(doc);
        Set<String> seen = new TreeSet<>();
        while (m.find()) {
            String enumClass = m.group(1);
            seen.add(enumClass);
            check(enumClass, table(doc.substring(m.end())));
        }
        assertThat(seen).as("state tables in docs/lifecycles.md").containsExactlyInAnyOrderElementsOf(EXPECTED);
    }

    /** The markdown table right after a marker: row state → the column states marked ✓. */
    private static Map<String, Set<String>> table(String after) {
        List<String> lines = new ArrayList<>();
        for (String line : after.strip().split("\n")) {
            if (!line.startsWith("|")) {
                break;
            }
            lines.add(line);
        }
        assertThat(lines).as("a table right after the marker").hasSizeGreaterThan(2);
        List<String> columns = cells(lines.get(0));
        Map<String, Set<String>> rows = new LinkedHashMap<>();
        rows.put("#columns", new TreeSet<>(columns.subList(1, columns.size())));
        for (String line : lines.subList(2, lines.size())) {
            List<String> cells = cells(line);
            Set<String> marked = new TreeSet<>();
            for (int i = 1; i < cells.size(); i++) {
                if (cells.get(i).equals("✓")) {
                    marked.add(columns.get(i));
                } else {
                    assertThat(cells.get(i)).as("cell %s -> %s", cells.get(0), columns.get(i)).isEmpty();
                }
            }
            rows.put(cells.get(0), marked);
        }
        return rows;
    }

    private static List<String> cells(String line) {
        String inner = line.strip();
        inner = inner.substring(1, inner.length() - (inner.endsWith("|") ? 1 : 0));
        List<String> out = new ArrayList<>();
        for (String cell : inner.split("\\|", -1)) {
            out.add(cell.strip());
        }
        return out;
    }

    private static void check(String enumClass, Map<String, Set<String>> doc) throws Exception {
        Class<?> type = Class.forName(enumClass);
        Object[] states = type.getEnumConstants();
        Method legal = transition(type);
        Set<String> documentedColumns = doc.remove("#columns");
        Set<String> names = new TreeSet<>();
        Set<String> targets = new TreeSet<>();
        for (Object from : states) {
            names.add(((Enum<?>) from).name());
            Set<String> allowed = new TreeSet<>();
            for (Object to : states) {
                if (allows(legal, from, to)) {
                    allowed.add(((Enum<?>) to).name());
                }
            }
            targets.addAll(allowed);
            assertThat(doc.get(((Enum<?>) from).name())).as("%s: transitions from %s in docs/lifecycles.md",
                    type.getSimpleName(), from).isEqualTo(allowed);
        }
        assertThat(doc.keySet()).as("%s: rows", type.getSimpleName()).containsExactlyInAnyOrderElementsOf(names);
        assertThat(documentedColumns).as("%s: columns cover every state that can be entered", type.getSimpleName())
                .containsAll(targets).isSubsetOf(names);
    }

    /** {@code canMoveTo}/{@code canTransitionTo} (boolean), or {@code to} (throws on an illegal move). */
    private static Method transition(Class<?> type) throws NoSuchMethodException {
        for (String name : List.of("canMoveTo", "canTransitionTo", "to")) {
            try {
                Method m = type.getDeclaredMethod(name, type);
                m.setAccessible(true);
                return m;
            } catch (NoSuchMethodException e) {
                // next
            }
        }
        throw new NoSuchMethodException(type + " has no transition method");
    }

    private static boolean allows(Method legal, Object from, Object to) throws IllegalAccessException {
        try {
            Object result = legal.invoke(from, to);
            return !(result instanceof Boolean b) || b;
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof IllegalStateException) {
                return false;
            }
            throw new IllegalStateException(e.getCause());
        }
    }
}
