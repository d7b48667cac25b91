package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A registered request. Its {@link RegistrationState} and the reason/source of the winning cancel are swapped as one
 * immutable {@link Status}, so a reader never sees "cancelled" without the reason, and the CAS on that reference is
 * what makes exactly one of abort / normal completion win.
 */
final class LiveRegistration implements Registration, Slot {

    private record Status(RegistrationState state, CancelReason reason, CancelSource source) {
    }

    private static final Status LIVE = new Status(RegistrationState.LIVE, null, null);

    private final String requestId;
    private final AbortHandler handler;
    private final CancellationRegistry owner;
    private final AtomicReference<Status> status;
    private final AtomicBoolean closed = new AtomicBoolean();

    private LiveRegistration(String requestId, AbortHandler handler, CancellationRegistry owner, Status initial) {
        this.requestId = requestId;
        this.handler = handler;
        this.owner = owner;
        this.status = new AtomicReference<>(initial);
    }

    static LiveRegistration live(String requestId, AbortHandler handler, CancellationRegistry owner) {
        return new LiveRegistration(requestId, handler, owner, LIVE);
    }

    /** A registration that meets a tombstone: born aborting, and the registering thread runs the abort. */
    static LiveRegistration abortingFromTombstone(String requestId, AbortHandler handler, CancellationRegistry owner,
            CancelReason reason) {
        return new LiveRegistration(requestId, handler, owner,
                new Status(RegistrationState.ABORTING, reason, CancelSource.TOMBSTONE));
    }

    /** LIVE → ABORTING. True only for the one caller that won; that caller must then run the abort. */
    boolean tryStartAbort(CancelReason reason, CancelSource source) {
        Status current = status.get();
        if (current.state() != RegistrationState.LIVE) {
            return false;
        }
        return status.compareAndSet(current,
                new Status(current.state().to(RegistrationState.ABORTING), reason, source));
    }

    /** ABORTING → ABORTED, by the thread that ran the abort handler; nobody else can move an ABORTING registration. */
    void finishAbort() {
        Status current = status.get();
        boolean moved = status.compareAndSet(current,
                new Status(current.state().to(RegistrationState.ABORTED), current.reason(), current.source()));
        Checks.requireState(moved, "registration %s changed state while aborting", requestId);
    }

    private boolean tryCompleteNormally() {
        Status current = status.get();
        if (current.state() != RegistrationState.LIVE) {
            return false;
        }
        return status.compareAndSet(current,
                new Status(current.state().to(RegistrationState.COMPLETED), null, null));
    }

    RegistrationState state() {
        return status.get().state();
    }

    CancelReason reason() {
        return status.get().reason();
    }

    CancelSource source() {
        return status.get().source();
    }

    AbortHandler handler() {
        return handler;
    }

    boolean isClosed() {
        return closed.get();
    }

    @Override
    public String requestId() {
        return requestId;
    }

    @Override
    public boolean isCancelled() {
        return status.get().state().isCancelled();
    }

    @Override
    public Optional<CancelReason> cancelReason() {
        return Optional.ofNullable(status.get().reason());
    }

    @Override
    public boolean complete() {
        if (!closed.compareAndSet(false, true)) {
            return false;
        }
        boolean normally = tryCompleteNormally();
        owner.unregister(this, normally);
        return normally;
    }

    @Override
    public String toString() {
        Status s = status.get();
        return "Registration[requestId=" + requestId + ", state=" + s.state() + (s.reason() == null ? "" : ", reason="
                + s.reason() + ", source=" + s.source()) + (closed.get() ? ", closed" : "") + "]";
    }
}
