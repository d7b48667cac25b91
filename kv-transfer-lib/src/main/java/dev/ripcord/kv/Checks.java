package dev.ripcord.kv;

/** Precondition helpers with message templates, formatted only on failure. */
final class Checks {
    private Checks() {
    }

    static void requireArgument(boolean ok, String template, Object... args) {
        if (!ok) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }

    static void requireState(boolean ok, String template, Object... args) {
        if (!ok) {
            throw new IllegalStateException(template.formatted(args));
        }
    }
}
