package dev.ripcord.engine;

import java.io.IOException;
import java.nio.file.Path;

/** A checkpoint or tokenizer file that is malformed or truncated; the message names the file and the problem. */
public final class InvalidModelFileException extends IOException {
    private final transient Path path;

    public InvalidModelFileException(Path path, String problem) {
        super(path + ": " + problem);
        this.path = path;
    }

    /** The offending file. */
    public Path path() {
        return path;
    }
}
