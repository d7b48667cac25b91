package dev.ripcord.stack;

import java.util.Collection;
import java.util.Optional;

/**
 * "Did you mean" for a mistyped option: the nearest candidate by optimal-string-alignment distance (edits and
 * adjacent transpositions, so {@code modle} is one edit from {@code model}), if it is near enough to be a typo.
 *
 * <p>The {@code ripcord} script has an awk twin of this (its {@code suggest} function); both must suggest the same
 * thing, which {@code RipcordScriptIT} (local-stack) checks for the examples there.
 */
final class Suggestions {

    private Suggestions() {
    }

    /** The candidate nearest to {@code typed}, if within {@code max(2, typed.length() / 3)} edits. */
    static Optional<String> nearest(String typed, Collection<String> candidates) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : candidates) {
            int d = distance(typed, candidate);
            if (d < bestDistance) {
                best = candidate;
                bestDistance = d;
            }
        }
        return bestDistance <= Math.max(2, typed.length() / 3) ? Optional.ofNullable(best) : Optional.empty();
    }

    /** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
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
}
