package dev.ripcord.format.gguf;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A GGUF file that is malformed, truncated, or uses something this reader does not know (a value type, a tensor
 * type id, a version). The message names the file, the byte offset where reading failed and what was expected there.
 */
public final class GgufFormatException extends IOException {
    private final transient Path path;
    private final long offset;

    public GgufFormatException(Path path, long offset, String problem) {
        super(path + ": at byte " + offset + ": " + problem);
        this.path = path;
        this.offset = offset;
    }

    /** The same, for a problem first seen as another exception ({@code cause}). */
    public GgufFormatException(Path path, long offset, String problem, Throwable cause) {
        this(path, offset, problem);
        initCause(cause);
    }

    /** The offending file. */
    public Path path() {
        return path;
    }

    /** The byte offset in the file where the problem was found. */
    public long offset() {
        return offset;
    }
}
