package dev.ripcord.protocol;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The one rule for which request paths a Ripcord service accepts, applied before any authentication decision on the
 * gateway and on the workers.
 *
 * <p>Spring's router matches a path after decoding its percent-escapes and stripping {@code ;params} from each
 * segment, so a gate that compared the raw path with {@code /v1/} or {@code /internal/} could be walked around with
 * {@code /v1;x/completions} or {@code /%76%31/completions}. Rather than try to reproduce every normalisation the
 * router (and any proxy in front of it) may apply, a path that has more than one reasonable reading is refused
 * outright. {@link #canonical(String)} accepts a raw path only when it is unambiguous and returns the path the router
 * matches; it refuses:
 *
 * <ul>
 *   <li>a path that does not start with {@code /}, or that contains {@code ;} (matrix parameters), {@code \}, a
 *       control character or a raw non-ASCII character;</li>
 *   <li>an empty segment ({@code //}), or a {@code .} or {@code ..} segment;</li>
 *   <li>a malformed escape, and an escape of anything that has a plain spelling or separates segments: letters,
 *       digits, {@code - . _ ~}, {@code /}, {@code \}, {@code ;}, {@code %} and control characters. Other escapes
 *       (a space, {@code :}, UTF-8 bytes) stay legal and are decoded, as the router decodes them.</li>
 * </ul>
 *
 * A trailing slash is kept as it is: the router does not match {@code /v1/completions/} to {@code /v1/completions},
 * and the gates compare prefixes of the decoded path, so it can only make a request less privileged.
 * Nothing Ripcord serves needs any of the refused forms: request IDs are plain {@code [A-Za-z0-9._:-]}.
 */
public final class RequestPaths {

    private RequestPaths() {
    }

    /**
     * The decoded path the router matches, or empty when {@code rawPath} is ambiguous (see the class comment).
     *
     * @param rawPath the path as it came on the request line, percent-escapes not decoded, without the query
     */
    public static Optional<String> canonical(String rawPath) {
        if (rawPath == null || rawPath.isEmpty() || rawPath.charAt(0) != '/') {
            return Optional.empty();
        }
        ByteArrayOutputStream decoded = new ByteArrayOutputStream(rawPath.length());
        int segmentStart = 1;
        for (int i = 0; i < rawPath.length(); i++) {
            char c = rawPath.charAt(i);
            if (c == ';' || c == '\\' || c < 0x20 || c >= 0x7f) {
                return Optional.empty();
            }
            if (c == '/') {
                if (i > 0 && !segmentAllowed(rawPath, segmentStart, i)) {
                    return Optional.empty();
                }
                segmentStart = i + 1;
                decoded.write(c);
            } else if (c == '%') {
                int value = escape(rawPath, i);
                if (value < 0 || mustNotBeEscaped(value)) {
                    return Optional.empty();
                }
                decoded.write(value);
                i += 2;
            } else {
                decoded.write(c);
            }
        }
        if (segmentStart < rawPath.length() && !segmentAllowed(rawPath, segmentStart, rawPath.length())) {
            return Optional.empty();
        }
        try {
            return Optional.of(StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(decoded.toByteArray())).toString());
        } catch (CharacterCodingException e) {
            return Optional.empty();
        }
    }

    /** Whether {@code canonical(rawPath)} starts with {@code prefix} as a whole segment (or equals it). */
    public static boolean isUnder(String canonicalPath, String prefix) {
        return canonicalPath.equals(prefix) || canonicalPath.startsWith(prefix.endsWith("/") ? prefix : prefix + "/");
    }

    /** A raw segment {@code [from, to)}: not empty, not {@code .} or {@code ..} (escapes of '.' are refused earlier). */
    private static boolean segmentAllowed(String rawPath, int from, int to) {
        int length = to - from;
        if (length == 0) {
            return false;
        }
        return !(rawPath.charAt(from) == '.' && (length == 1 || (length == 2 && rawPath.charAt(from + 1) == '.')));
    }

    /** The byte a {@code %XX} escape at {@code at} stands for, or -1 when it is malformed. */
    private static int escape(String rawPath, int at) {
        if (at + 2 >= rawPath.length()) {
            return -1;
        }
        int high = hex(rawPath.charAt(at + 1));
        int low = hex(rawPath.charAt(at + 2));
        return high < 0 || low < 0 ? -1 : (high << 4) | low;
    }

    /** An ASCII hex digit's value, or -1 ({@link Character#digit} would also take other scripts' digits). */
    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    }

    private static boolean mustNotBeEscaped(int b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
                || b == '-' || b == '.' || b == '_' || b == '~'
                || b == '/' || b == '\\' || b == ';' || b == '%' || b < 0x20 || b == 0x7f;
    }
}
