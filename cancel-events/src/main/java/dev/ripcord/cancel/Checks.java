package dev.ripcord.cancel;

/**
 * Precondition helpers with message templates. The message is only formatted when the check fails, so callers on the
 * hot path pay for a branch, not for a {@code String.format}.
 */
final class Checks {

    private Checks() {
    }

    static void requireArgument(boolean condition, String template, Object... args) {
        if (!condition) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }

    static void requireState(boolean condition, String template, Object... args) {
        if (!condition) {
            throw new IllegalStateException(template.formatted(args));
        }
    }

    static String requireText(String value, String name) {
        requireArgument(value != null && !value.isBlank(), "%s must not be blank", name);
        return value;
    }
}
