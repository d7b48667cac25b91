package dev.ripcord.kv.session;

/**
 * Precondition helpers with message templates, formatted only on failure. The internal packages' copy of the API's
 * package-private {@code dev.ripcord.kv.Checks}: two small copies, so that the API imports nothing of the
 * implementation and no helper becomes API.
 */
public final class Checks {
    private Checks() {
    }

    public static void requireArgument(boolean ok, String template, Object... args) {
        if (!ok) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }

    public static void requireState(boolean ok, String template, Object... args) {
        if (!ok) {
            throw new IllegalStateException(template.formatted(args));
        }
    }
}
