package dev.ripcord.cancel;

/**
 * What the registry holds for one request ID: a registered request or a tombstone. Sealed so that every decision in
 * {@link CancellationRegistry} is an exhaustive switch.
 */
sealed interface Slot permits LiveRegistration, Tombstone {
}
