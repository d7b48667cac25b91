package dev.ripcord.engine;

/**
 * Lifecycle of a {@link Sequence}.
 *
 * <pre>
 * from \ to      AWAITING_KV   ACTIVE         FREED
 * (created)      reserve()     newSequence()  -
 * AWAITING_KV    -             adopt()        free()
 * ACTIVE         -             -              free()
 * FREED          -             -              -
 * </pre>
 *
 * {@code AWAITING_KV}: pages are reserved and a transfer is writing their bytes; the sequence cannot compute.
 * {@code ACTIVE}: the first {@link Sequence#length()} positions of KV are valid; prefill, sampling and decode are
 * allowed. {@code FREED}: pages returned to the pool; every operation but reading the id fails.
 */
public enum SequenceState {
    AWAITING_KV,
    ACTIVE,
    FREED;

    /** Returns {@code next} if the table above allows {@code this → next}, else throws. */
    SequenceState transitionTo(SequenceState next, long sequenceId) {
        boolean legal = switch (this) {
            case AWAITING_KV -> next == ACTIVE || next == FREED;
            case ACTIVE -> next == FREED;
            case FREED -> false;
        };
        Checks.requireState(legal, "sequence %s cannot go from %s to %s", sequenceId, this, next);
        return next;
    }
}
