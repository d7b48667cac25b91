package dev.ripcord.gateway.openai;

import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * Request ids: the client's {@code X-Request-Id} when it is 1..128 characters of {@code [A-Za-z0-9._:-]}, else a
 * generated {@code cmpl-}/{@code chatcmpl-}/{@code req-} id with 24 random alphanumerics (about 143 bits: unique
 * without coordination; not a secret, so no {@code SecureRandom} and no risk of blocking on entropy).
 */
final class RequestIds {

    /** Request and response header. */
    static final String HEADER = "X-Request-Id";
    /** Reactor context key; bridged to the logging MDC elsewhere. */
    static final String CONTEXT_KEY = "requestId";

    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");
    private static final char[] ALPHANUMERIC =
            "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();
    private static final int RANDOM_LENGTH = 24;

    private RequestIds() {
    }

    static boolean isValid(@Nullable String id) {
        return id != null && VALID.matcher(id).matches();
    }

    static String forCompletion(GenerationRequest.Kind kind) {
        return generate(kind == GenerationRequest.Kind.CHAT ? "chatcmpl-" : "cmpl-");
    }

    static String generate(String prefix) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        StringBuilder id = new StringBuilder(prefix.length() + RANDOM_LENGTH).append(prefix);
        for (int i = 0; i < RANDOM_LENGTH; i++) {
            id.append(ALPHANUMERIC[random.nextInt(ALPHANUMERIC.length)]);
        }
        return id.toString();
    }
}
