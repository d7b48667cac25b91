package dev.ripcord.cancel;

/** A request ID was registered while an earlier registration of the same ID is still open: a bug in the caller. */
public final class DuplicateRegistrationException extends IllegalStateException {

    DuplicateRegistrationException(String requestId) {
        super("request ID " + requestId + " is already registered; complete() the earlier registration first "
                + "(request IDs must be unique per request)");
    }
}
