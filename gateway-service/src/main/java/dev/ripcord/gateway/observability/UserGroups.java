package dev.ripcord.gateway.observability;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

import org.jspecify.annotations.Nullable;

/**
 * The OpenAI {@code user} field as a metrics tag of bounded cardinality: a client may send any string, so the tag is
 * a stable hash of it into {@value #GROUPS} groups ({@code u00} .. {@code u15}), or {@code none} without one. The
 * same user always lands in the same group; logs carry the field itself (MDC key {@code user}).
 */
public final class UserGroups {

    /** How many groups users are hashed into. */
    public static final int GROUPS = 16;

    private UserGroups() {
    }

    public static String of(@Nullable String user) {
        if (user == null || user.isEmpty()) {
            return "none";
        }
        CRC32 crc = new CRC32();
        crc.update(user.getBytes(StandardCharsets.UTF_8));
        return "u%02d".formatted(crc.getValue() % GROUPS);
    }
}
