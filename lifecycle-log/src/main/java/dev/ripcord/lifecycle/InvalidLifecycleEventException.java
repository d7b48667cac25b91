package dev.ripcord.lifecycle;

/** A record on the lifecycle topic that is not a lifecycle event this build can read: corrupt, foreign or newer. */
public final class InvalidLifecycleEventException extends IllegalArgumentException {

    public InvalidLifecycleEventException(String message) {
        super(message);
    }
}
