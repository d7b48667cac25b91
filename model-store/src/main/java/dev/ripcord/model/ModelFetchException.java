package dev.ripcord.model;

/**
 * A model could not be made available: npm is missing, the download failed, or a checksum did not match. The
 * message is one line that says what failed and names the fallback ({@value ModelStore#FALLBACK}), fit to print
 * as is.
 */
public final class ModelFetchException extends RuntimeException {

    ModelFetchException(String message) {
        super(oneLine(message));
    }

    ModelFetchException(String message, Throwable cause) {
        super(oneLine(message), cause);
    }

    private static String oneLine(String message) {
        return message.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
    }
}
