package dev.ripcord.stack;

import java.io.PrintStream;

/**
 * The warm-up's line on {@code ./ripcord up}'s console: {@code ripcord: warming up the request path: 120/240
 * requests}, rewritten in place after each round on a terminal; on anything else (a pipe, a file) the line with the
 * total only, so that a captured log has no carriage returns.
 */
final class WarmUpProgress {

    private final PrintStream out;
    private final boolean terminal;
    private final long total;

    WarmUpProgress(PrintStream out, boolean terminal, long total) {
        this.out = out;
        this.terminal = terminal;
        this.total = total;
        if (terminal) {
            answered(0);
        } else {
            out.println("ripcord: warming up the request path: " + total + " requests...");
        }
    }

    /** {@code done} requests of the warm-up have been answered (or failed). */
    void answered(int done) {
        if (terminal) {
            out.print("\rripcord: warming up the request path: " + done + "/" + total + " requests");
            out.flush();
        }
    }

    /** Ends the line, before the warm-up's summary. */
    void end() {
        if (terminal) {
            out.println();
        }
    }
}
