package dev.ripcord.stack;

/** JSON string literals for the launcher's hand-written JSON (the stack file, the warm-up requests). */
final class JsonStrings {

    private JsonStrings() {
    }

    /** {@code s} as a JSON string literal: quotes, backslashes and control characters escaped. */
    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
