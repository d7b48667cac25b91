package dev.ripcord.protocol;

import java.util.Collection;
import java.util.Optional;

/**
 * "Did you mean" for a mistyped name: the nearest candidate by optimal-string-alignment distance (edits and adjacent
 * transpositions, so {@code modle} is one edit from {@code model}), if it is near enough to be a typo. The one
 * place Java code picks a suggestion: {@code ./ripcord up}'s options (local-stack), the operator CLI's options and
 * bench names (ripcord-cli), and the API's {@code unknown_parameter} error (gateway-service). It lives here because
 * this is the module all three depend on.
 *
 * <p>Every tool words it the same way, {@code unknown option '--sinse'; did you mean '--since'?}: see
 * {@link #didYouMean}. The {@code ripcord} script has an awk twin of {@link #nearest} (its {@code suggest}
 * function); both must suggest the same thing, which {@code RipcordScriptIT} (local-stack) checks.
 */
public final class Suggestions {

    private Suggestions() {
    }

    /** The candidate nearest to {@code typed}, if within {@code max(2, typed.length() / 3)} edits. */
    public static Optional<String> nearest(String typed, Collection<String> candidates) {
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

    /**
     * {@code "; did you mean 'PREFIX<nearest>'?"}, or {@code ""} when no candidate is near: the tail of every
     * unknown-name message ({@code prefix} is {@code "--"} for options, {@code ""} for names).
     */
    public static String didYouMean(String typed, Collection<String> candidates, String prefix) {
        return nearest(typed, candidates).map(s -> "; did you mean '" + prefix + s + "'?").orElse("");
    }

    /** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
    public static int distance(String a, String b) {
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
