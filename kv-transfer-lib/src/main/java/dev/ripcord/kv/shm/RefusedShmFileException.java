package dev.ripcord.kv.shm;

import java.io.IOException;

/**
 * A peer's descriptor named a shared-memory file this process will not map: outside the configured directory, a path
 * with {@code .} or {@code ..}, a symbolic link, not a regular file, owned by another user, not named like a Ripcord
 * file, or with a header whose sizes do not fit the file. Nothing was mapped. Internal.
 */
public final class RefusedShmFileException extends IOException {
    public RefusedShmFileException(String named, String why) {
        super("shared-memory file " + named + " refused: " + why);
    }
}
