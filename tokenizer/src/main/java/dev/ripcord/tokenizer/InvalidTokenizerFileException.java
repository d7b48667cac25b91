package dev.ripcord.tokenizer;

import java.io.IOException;
import java.nio.file.Path;

/** A tokenizer file that is malformed or truncated; the message names the file and the problem. */
public final class InvalidTokenizerFileException extends IOException {
    private final transient Path path;
    private final String problem;

    public InvalidTokenizerFileException(Path path, String problem) {
        super(path + ": " + problem);
        this.path = path;
        this.problem = problem;
    }

    /** What is wrong, without the file name. */
    public String problem() {
        return problem;
    }

    /** The offending file. */
    public Path path() {
        return path;
    }
}
