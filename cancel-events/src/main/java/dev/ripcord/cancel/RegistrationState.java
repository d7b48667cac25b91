package dev.ripcord.cancel;

/**
 * The life of one registration. {@link #to} is the only way to compute a next state and rejects every transition not
 * in this table; {@link LiveRegistration} makes each transition atomic with a CAS, so a transition happens at most
 * once and exactly one of "abort" and "complete normally" can win.
 *
 * <pre>
 *  from \ to   | ABORTING                        | ABORTED                | COMPLETED
 *  ------------+---------------------------------+------------------------+------------------
 *  (register)  | when registering over a tombstone (initial state) | -    | -
 *  LIVE        | a cancel won                    | -                      | complete() won
 *  ABORTING    | -                               | abort handler returned | -
 *  ABORTED     | - (terminal)                    | -                      | -
 *  COMPLETED   | - (terminal)                    | -                      | -
 * </pre>
 *
 * Unregistering (removal from the registry) is separate from this machine: an ABORTING or ABORTED registration stays
 * registered until its owner calls {@link Registration#complete()}.
 */
enum RegistrationState {
    LIVE,
    ABORTING,
    ABORTED,
    COMPLETED;

    /** Returns {@code next} if {@code this -> next} is in the table; throws {@link IllegalStateException} if not. */
    RegistrationState to(RegistrationState next) {
        boolean legal = switch (this) {
            case LIVE -> next == ABORTING || next == COMPLETED;
            case ABORTING -> next == ABORTED;
            case ABORTED, COMPLETED -> false;
        };
        Checks.requireState(legal, "illegal registration transition %s -> %s", this, next);
        return next;
    }

    boolean isCancelled() {
        return this == ABORTING || this == ABORTED;
    }
}
