package dev.ripcord.kv;

/**
 * The life of a transfer session, on either side. Transitions go through {@link #transitionTo}, which rejects
 * anything not in this table:
 *
 * <pre>
 * from \ to     | TRANSFERRING COMPLETING COMPLETED ABORTING ABORTED RELEASED
 * --------------+--------------------------------------------------------------
 * OPEN          |     yes         yes(S)     -        yes       -       -
 * TRANSFERRING  |      -          yes(S)    yes(R)    yes       -       -
 * COMPLETING    |      -           -        yes(S)    yes       -       -
 * COMPLETED     |      -           -         -         -        -      yes
 * ABORTING      |      -           -         -         -       yes      -
 * ABORTED       |      -           -         -         -        -      yes
 * RELEASED      |      -           -         -         -        -       -
 * </pre>
 * (S) only on the sender, (R) only on the receiver.
 * <ul>
 *   <li>OPEN: created; the receiver has handed out its descriptor, the sender is attaching.</li>
 *   <li>TRANSFERRING: the sender is attached; writes may land.</li>
 *   <li>COMPLETING (sender): {@code complete()} was called; waiting for the receiver's verdict.</li>
 *   <li>COMPLETED: the receiver holds exactly the bytes the sender sent, and the metadata.</li>
 *   <li>ABORTING: abort decided; nothing new is accepted or started; in-flight writes drain.</li>
 *   <li>ABORTED: drained: no write of this transfer session can still land (receiver) or still read source memory
 *   (sender).</li>
 *   <li>RELEASED: the session's resources (fence slot, region reference, source pins, registration) are given back,
 *   exactly once; the receiver's pages may be reused.</li>
 * </ul>
 * Abort is accepted in OPEN, TRANSFERRING and COMPLETING and is a no-op afterwards.
 */
public enum SessionState {
    OPEN, TRANSFERRING, COMPLETING, COMPLETED, ABORTING, ABORTED, RELEASED;

    /** Returns {@code next} if the table allows {@code this -> next}, else throws. */
    public SessionState transitionTo(SessionState next) {
        Checks.requireState(canTransitionTo(next), "illegal session transition %s -> %s", this, next);
        return next;
    }

    public boolean canTransitionTo(SessionState next) {
        return switch (this) {
            case OPEN -> next == TRANSFERRING || next == COMPLETING || next == ABORTING;
            case TRANSFERRING -> next == COMPLETING || next == COMPLETED || next == ABORTING;
            case COMPLETING -> next == COMPLETED || next == ABORTING;
            case COMPLETED, ABORTED -> next == RELEASED;
            case ABORTING -> next == ABORTED;
            case RELEASED -> false;
        };
    }

    /** True while abort() would still change the outcome. */
    public boolean isAbortable() {
        return this == OPEN || this == TRANSFERRING || this == COMPLETING;
    }

    /** COMPLETED, ABORTED or RELEASED: the outcome is decided and drained. */
    public boolean isTerminal() {
        return this == COMPLETED || this == ABORTED || this == RELEASED;
    }
}
