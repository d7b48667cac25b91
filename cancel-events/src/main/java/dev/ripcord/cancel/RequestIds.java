package dev.ripcord.cancel;

import java.util.HexFormat;
import java.util.UUID;

/**
 * The rules for request IDs: 1 to {@value #MAX_LENGTH} characters of {@code [A-Za-z0-9._:-]}. IDs are compared
 * exactly, as whole strings: nothing in Ripcord matches an ID by prefix, so {@code req-1} never cancels
 * {@code req-12}. The alphabet keeps IDs safe in Kafka keys, HTTP headers, log lines and metric-free MDC values.
 */
public final class RequestIds {

    public static final int MAX_LENGTH = 128;

    /** What {@link #newId()} puts in front of the random part, so that generated IDs are recognisable in logs. */
    public static final String PREFIX = "req-";

    private static final int SHOWN_IN_ERRORS = 64;

    private RequestIds() {
    }

    public static boolean isValid(String requestId) {
        if (requestId == null || requestId.isEmpty() || requestId.length() > MAX_LENGTH) {
            return false;
        }
        for (int i = 0; i < requestId.length(); i++) {
            if (!allowed(requestId.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** Returns {@code requestId} if it is valid, else throws a stackless {@link InvalidRequestIdException}. */
    public static String require(String requestId) {
        if (!isValid(requestId)) {
            throw new InvalidRequestIdException(problemWith(requestId));
        }
        return requestId;
    }

    /**
     * A new ID: {@value #PREFIX} and 32 hex digits of a random (version 4) UUID, 122 random bits, so collisions
     * between gateways need no coordination.
     */
    public static String newId() {
        UUID uuid = UUID.randomUUID();
        HexFormat hex = HexFormat.of();
        return PREFIX + hex.toHexDigits(uuid.getMostSignificantBits()) + hex.toHexDigits(uuid.getLeastSignificantBits());
    }

    private static boolean allowed(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '.' || c == '_' || c == ':' || c == '-';
    }

    /** What is wrong with {@code requestId}, for error messages; null when it is valid. */
    static String problemWith(String requestId) {
        if (requestId == null) {
            return "request ID is missing";
        }
        if (requestId.isEmpty()) {
            return "request ID is empty";
        }
        String shown = requestId.length() <= SHOWN_IN_ERRORS
                ? requestId
                : requestId.substring(0, SHOWN_IN_ERRORS) + "...";
        if (requestId.length() > MAX_LENGTH) {
            return "request ID '%s' is %d characters, at most %d allowed".formatted(shown, requestId.length(), MAX_LENGTH);
        }
        for (int i = 0; i < requestId.length(); i++) {
            if (!allowed(requestId.charAt(i))) {
                return "request ID '%s' has character U+%04X at index %d; allowed: [A-Za-z0-9._:-]"
                        .formatted(shown, (int) requestId.charAt(i), i);
            }
        }
        return null;
    }
}
