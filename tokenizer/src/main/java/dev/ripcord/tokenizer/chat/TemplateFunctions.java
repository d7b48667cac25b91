package dev.ripcord.tokenizer.chat;

import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.Locale;

/**
 * The globals Hugging Face's {@code apply_chat_template} gives every template, as static methods Jinjava can call.
 * Public only because Jinjava invokes them reflectively.
 */
public final class TemplateFunctions {
    private TemplateFunctions() {
    }

    /** {@code raise_exception(message)}: the template refuses the conversation. */
    public static String raiseException(String message) {
        throw new ChatTemplateException(message, ChatTemplateException.Kind.RAISED);
    }

    /**
     * {@code strftime_now(format)}: the current local time in Python's {@code strftime} format; the directives chat
     * templates use ({@code %d %b %B %Y %y %m %H %M %S %a %A %p %%}) in the C locale.
     */
    public static String strftimeNow(String format) {
        return strftime(ZonedDateTime.now(), format);
    }

    static String strftime(ZonedDateTime t, String format) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                out.append(c);
                continue;
            }
            char d = format.charAt(++i);
            switch (d) {
                case 'd' -> out.append("%02d".formatted(t.getDayOfMonth()));
                case 'm' -> out.append("%02d".formatted(t.getMonthValue()));
                case 'Y' -> out.append(t.getYear());
                case 'y' -> out.append("%02d".formatted(t.getYear() % 100));
                case 'H' -> out.append("%02d".formatted(t.getHour()));
                case 'M' -> out.append("%02d".formatted(t.getMinute()));
                case 'S' -> out.append("%02d".formatted(t.getSecond()));
                case 'b' -> out.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'B' -> out.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.US));
                case 'a' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'A' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US));
                case 'p' -> out.append(t.getHour() < 12 ? "AM" : "PM");
                case '%' -> out.append('%');
                default -> out.append('%').append(d);
            }
        }
        return out.toString();
    }
}
