package dev.ripcord.tokenizer;

/** Precondition helpers with message templates; the message is only formatted when the check fails. */
final class Checks {
    private Checks() {
    }

    static void requireArgument(boolean condition, String template, Object... args) {
        if (!condition) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }
}
