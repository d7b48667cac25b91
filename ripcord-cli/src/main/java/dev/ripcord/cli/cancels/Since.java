package dev.ripcord.cli.cancels;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/** A point in time given on the command line: an ISO-8601 instant, or a duration back from now ({@code 90s}, {@code 10m}, {@code 2h}, {@code 1d}). */
final class Since {

    private Since() {
    }

    static Instant parse(String text, Instant now) {
        String t = text.trim();
        try {
            return Instant.parse(t);
        } catch (DateTimeParseException notAnInstant) {
            // a duration
        }
        if (t.length() >= 2) {
            char unit = Character.toLowerCase(t.charAt(t.length() - 1));
            String number = t.substring(0, t.length() - 1);
            if (t.toLowerCase(Locale.ROOT).endsWith("ms")) {
                return now.minusMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            try {
                long n = Long.parseLong(number);
                Duration d = switch (unit) {
                    case 's' -> Duration.ofSeconds(n);
                    case 'm' -> Duration.ofMinutes(n);
                    case 'h' -> Duration.ofHours(n);
                    case 'd' -> Duration.ofDays(n);
                    default -> null;
                };
                if (d != null && !d.isNegative()) {
                    return now.minus(d);
                }
            } catch (NumberFormatException e) {
                // fall through
            }
        }
        throw new IllegalArgumentException("'" + text + "' is neither an ISO-8601 instant (2026-12-01T12:00:00Z) nor a "
                + "duration back from now (90s, 10m, 2h, 1d)");
    }
}
