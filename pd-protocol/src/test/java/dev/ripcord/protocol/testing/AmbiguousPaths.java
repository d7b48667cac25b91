package dev.ripcord.protocol.testing;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Every spelling of a path that a router may read as that path while a naive prefix test does not: matrix
 * parameters on each segment, escaped letters (the first, and all of a segment), an escaped separator, dot and empty
 * segments. For tests that send each spelling to a gated route and expect it refused, never served.
 */
public final class AmbiguousPaths {

    private AmbiguousPaths() {
    }

    /** The spellings of {@code path} (plain, starting with {@code /}, at least one segment), without the plain one. */
    public static List<String> of(String path) {
        String[] segments = path.substring(1).split("/", -1);
        Set<String> variants = new LinkedHashSet<>();
        for (int i = 0; i < segments.length; i++) {
            variants.add(with(segments, i, segments[i] + ";x"));
            variants.add(with(segments, i, segments[i] + ";"));
            if (!segments[i].isEmpty()) {
                variants.add(with(segments, i, escape(segments[i].charAt(0)) + segments[i].substring(1)));
                variants.add(with(segments, i, escapeAll(segments[i])));
                if (segments[i].length() > 1) { // lower-case hex for the second letter
                    variants.add(with(segments, i, segments[i].charAt(0) + escape(segments[i].charAt(1)).toLowerCase()
                            + segments[i].substring(2)));
                }
            }
        }
        variants.add("/x/.." + path);
        variants.add("/." + path);
        variants.add("/" + path);
        variants.add(path.replaceFirst("/", "//"));
        if (segments.length > 1) {
            variants.add("/" + segments[0] + "%2F" + path.substring(segments[0].length() + 2));
            variants.add("/" + segments[0] + "%2f" + path.substring(segments[0].length() + 2));
            variants.add("/" + segments[0] + "//" + path.substring(segments[0].length() + 2));
            variants.add("/" + segments[0] + "/./" + path.substring(segments[0].length() + 2));
        }
        variants.remove(path);
        return new ArrayList<>(variants);
    }

    private static String with(String[] segments, int index, String replacement) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < segments.length; i++) {
            out.append('/').append(i == index ? replacement : segments[i]);
        }
        return out.toString();
    }

    private static String escape(char c) {
        return "%%%02X".formatted((int) c);
    }

    private static String escapeAll(String segment) {
        StringBuilder out = new StringBuilder();
        for (char c : segment.toCharArray()) {
            out.append(escape(c));
        }
        return out.toString();
    }
}
