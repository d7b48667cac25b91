package dev.ripcord.gateway.generation;

import java.util.List;

/**
 * Applies stop strings to text that arrives in pieces, one detokenized token at a time.
 *
 * <p>Design note: a stop string may be split across tokens ({@code "END"} as {@code "E"}, {@code "ND"}), so text
 * that could still turn out to be the start of a stop string is held back: after each piece, the longest suffix of
 * the pending text that is a proper prefix of some stop string stays pending and everything before it is released.
 * When a stop string occurs, the text before its earliest occurrence is released and the rest is dropped. At the
 * end of a generation without a match, {@link #drain()} releases what was held back. The held text is always
 * shorter than the longest stop string, so each piece costs O(pending × stops).
 *
 * <p>One instance per generation; not thread-safe (a Flux delivers signals serially).
 */
final class StopStringScanner {

    private final List<String> stops;
    private final StringBuilder pending = new StringBuilder();
    private boolean stopped;

    StopStringScanner(List<String> stops) {
        for (String stop : stops) {
            if (stop.isEmpty()) {
                throw new IllegalArgumentException("stop strings must not be empty");
            }
        }
        this.stops = List.copyOf(stops);
    }

    /**
     * Adds a piece of text and returns what can be shown now ({@code ""} if nothing). After a match,
     * {@link #stopped()} is true and further pieces are refused.
     */
    String accept(String piece) {
        if (stopped) {
            throw new IllegalStateException("a stop string already matched");
        }
        if (stops.isEmpty()) {
            return piece;
        }
        pending.append(piece);
        int match = earliestMatch();
        if (match >= 0) {
            stopped = true;
            String released = pending.substring(0, match);
            pending.setLength(0);
            return released;
        }
        int releasable = pending.length() - heldBackLength();
        String released = pending.substring(0, releasable);
        pending.delete(0, releasable);
        return released;
    }

    /** Releases the held-back text at the end of a generation that no stop string ended. */
    String drain() {
        String rest = pending.toString();
        pending.setLength(0);
        return rest;
    }

    /** Whether a stop string matched; the generation must end. */
    boolean stopped() {
        return stopped;
    }

    private int earliestMatch() {
        int earliest = -1;
        for (String stop : stops) {
            int at = pending.indexOf(stop);
            if (at >= 0 && (earliest < 0 || at < earliest)) {
                earliest = at;
            }
        }
        return earliest;
    }

    /** Length of the longest suffix of {@code pending} that is a proper prefix of some stop string. */
    private int heldBackLength() {
        String text = pending.toString();
        int longest = 0;
        for (String stop : stops) {
            int max = Math.min(stop.length() - 1, text.length());
            for (int len = max; len > longest; len--) {
                if (text.regionMatches(text.length() - len, stop, 0, len)) {
                    longest = len;
                    break;
                }
            }
        }
        return longest;
    }
}
