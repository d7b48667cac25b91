package dev.ripcord.protocol;

import java.security.SecureRandom;

/**
 * The one set of rules for request IDs, applied by every Ripcord service.
 *
 * <ul>
 *   <li><b>Valid</b> (what a client may send): 1 to {@value #MAX_LENGTH} characters of {@code [A-Za-z0-9._:-]}. The
 *       alphabet keeps IDs safe in HTTP headers, Kafka keys, log lines and JSON without escaping. IDs are compared
 *       exactly, as whole strings: nothing in Ripcord matches an ID by prefix, so {@code req-1} never cancels
 *       {@code req-12}.</li>
 *   <li><b>Generated</b> (when the client sent none): {@value #PREFIX} and {@value #RANDOM_LENGTH} random characters of
 *       {@code [A-Za-z0-9]} ({@link #GENERATED_PATTERN}), about 143 bits of output, so gateways need no coordination.
 *       It comes from a {@link SecureRandom}: an ID must not be predictable from the ones a client has seen (the
 *       default provider on Linux reads the kernel's non-blocking source, so the event loop never waits on entropy).</li>
 *   <li><b>Internal</b> (what the workers, the cancellations topic, tombstones and the lifecycle log know a request
 *       by): minted by the gateway at admission with {@link #internalId}: the client's ID (its first
 *       {@value #INTERNAL_CLIENT_PART} characters), {@value #INTERNAL_SEPARATOR} and {@value #INTERNAL_RANDOM_LENGTH}
 *       secure random characters of {@code [A-Za-z0-9]}. One per request, never reused: a cancel addressed to it
 *       reaches that request and no other, however often a client reuses its own ID, and a client cannot name another
 *       request's internal ID because it never sees one. The choices of an {@code n > 1} request are known by
 *       {@link #choiceId}: the internal ID, {@value #CHOICE_SEPARATOR} and the choice's index. An internal ID ends in
 *       its random part, which holds no {@value #CHOICE_SEPARATOR}; a choice's ID ends in
 *       {@value #CHOICE_SEPARATOR} and digits: so no request's ID equals another's choice's, whatever the clients'
 *       IDs are. Internal IDs obey the same alphabet and length as any ID, so every service handles them alike.</li>
 *   <li><b>Carried</b> in the {@value #HEADER} header, on the public API and on every internal call; in the Reactor
 *       context and the logging MDC under {@value #CONTEXT_KEY}; on a WebFlux exchange under
 *       {@value #EXCHANGE_ATTRIBUTE}.</li>
 * </ul>
 *
 * <p>At the gateway an invalid client ID is refused (400 {@code invalid_request_id}), never silently replaced: a
 * client that sends an ID means to find its request by it later, in logs or to cancel it.
 */
public final class RequestIds {

    /** The request and response header of the request ID, on the public API and every internal call. */
    public static final String HEADER = "X-Request-Id";

    /** The Reactor context key and logging MDC key of the request ID. */
    public static final String CONTEXT_KEY = "requestId";

    /** The WebFlux exchange attribute that holds the request ID once the edge filter has settled it. */
    public static final String EXCHANGE_ATTRIBUTE = "dev.ripcord.requestId";

    public static final int MAX_LENGTH = 128;

    /** What {@link #newId()} puts in front of the random part, so that generated IDs are recognisable in logs. */
    public static final String PREFIX = "req-";

    /** How many random characters follow {@link #PREFIX} in a generated ID. */
    public static final int RANDOM_LENGTH = 24;

    /** The format of every generated ID, as a regular expression (for tests and documentation). */
    public static final String GENERATED_PATTERN = "req-[A-Za-z0-9]{24}";

    /** How many characters of the client's ID an {@linkplain #internalId internal ID} starts with, at most. */
    public static final int INTERNAL_CLIENT_PART = 96;

    /** What separates the client's part of an {@linkplain #internalId internal ID} from its random part. */
    public static final String INTERNAL_SEPARATOR = ":";

    /** How many random characters end an {@linkplain #internalId internal ID} (about 131 bits). */
    public static final int INTERNAL_RANDOM_LENGTH = 22;

    /** What separates an internal ID from a choice's index in {@link #choiceId}. */
    public static final String CHOICE_SEPARATOR = ".";

    /** The rule for a valid ID, in words, for error messages. */
    public static final String RULE = "1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'";

    private static final char[] ALPHANUMERIC =
            "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();
    private static final int SHOWN_IN_ERRORS = 64;
    /** Thread-safe; shared, as its default Linux implementation reads a non-blocking kernel source. */
    private static final SecureRandom RANDOM = new SecureRandom();

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

    /** A new ID in the generated format: {@value #PREFIX} and {@value #RANDOM_LENGTH} characters of {@code [A-Za-z0-9]}. */
    public static String newId() {
        return PREFIX + randomPart(RANDOM_LENGTH);
    }

    /**
     * A new internal ID for a request the client calls {@code clientId} (valid): its first
     * {@value #INTERNAL_CLIENT_PART} characters, {@value #INTERNAL_SEPARATOR} and {@value #INTERNAL_RANDOM_LENGTH}
     * secure random characters of {@code [A-Za-z0-9]}. Valid, and at most {@value #MAX_LENGTH} characters even with
     * a {@linkplain #choiceId choice suffix} of up to four digits.
     */
    public static String internalId(String clientId) {
        require(clientId);
        String clientPart = clientId.length() <= INTERNAL_CLIENT_PART
                ? clientId : clientId.substring(0, INTERNAL_CLIENT_PART);
        return clientPart + INTERNAL_SEPARATOR + randomPart(INTERNAL_RANDOM_LENGTH);
    }

    /**
     * The ID the workers know choice {@code index} of request {@code internalId} by: the internal ID itself for
     * choice 0, else the internal ID, {@value #CHOICE_SEPARATOR} and the index. Since an internal ID ends in its
     * random, alphanumeric part, no choice's ID is any request's internal ID, and two choices' IDs are equal only
     * when they are the same choice of the same request.
     */
    public static String choiceId(String internalId, int index) {
        if (index < 0) {
            throw new IllegalArgumentException("choice index must be >= 0, got " + index);
        }
        return index == 0 ? internalId : internalId + CHOICE_SEPARATOR + index;
    }

    /**
     * Whether {@code workerId}, an ID a worker or an event names a request by, belongs to what a person asks about
     * as {@code asked}: {@code asked} itself, one of its {@linkplain #choiceId choices}, or (when {@code asked} is a
     * client's ID) an {@linkplain #internalId internal ID} minted for it, or a choice of one. For tools that take the
     * ID a client knows, such as {@code ripcord audit --request}; every request that reused the client's ID matches.
     */
    public static boolean names(String asked, String workerId) {
        if (workerId == null || asked == null) {
            return false;
        }
        String id = withoutChoice(workerId);
        if (id.equals(asked) || workerId.equals(asked)) {
            return true;
        }
        String clientPart = asked.length() <= INTERNAL_CLIENT_PART ? asked : asked.substring(0, INTERNAL_CLIENT_PART);
        int random = id.length() - INTERNAL_RANDOM_LENGTH;
        if (random - 1 != clientPart.length() || !id.startsWith(clientPart)
                || !id.startsWith(INTERNAL_SEPARATOR, clientPart.length())) {
            return false;
        }
        for (int i = random; i < id.length(); i++) {
            if (!Character.isLetterOrDigit(id.charAt(i)) || id.charAt(i) > 'z') {
                return false;
            }
        }
        return true;
    }

    /** {@code id} without a trailing choice suffix ({@code .} and digits), if it has one. */
    private static String withoutChoice(String id) {
        int dot = id.lastIndexOf(CHOICE_SEPARATOR);
        if (dot < 0 || dot == id.length() - 1) {
            return id;
        }
        for (int i = dot + 1; i < id.length(); i++) {
            if (id.charAt(i) < '0' || id.charAt(i) > '9') {
                return id;
            }
        }
        return id.substring(0, dot);
    }

    private static String randomPart(int length) {
        char[] part = new char[length];
        for (int i = 0; i < length; i++) {
            part[i] = ALPHANUMERIC[RANDOM.nextInt(ALPHANUMERIC.length)];
        }
        return new String(part);
    }

    private static boolean allowed(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '.' || c == '_' || c == ':' || c == '-';
    }

    /** What is wrong with {@code requestId}, for error messages; null when it is valid. */
    public static String problemWith(String requestId) {
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
                        .formatted(escaped(shown), (int) requestId.charAt(i), i);
            }
        }
        return null;
    }

    /** Control characters of a client's ID are not echoed raw into messages (log or header injection). */
    private static String escaped(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                out.append("\\u%04X".formatted((int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
