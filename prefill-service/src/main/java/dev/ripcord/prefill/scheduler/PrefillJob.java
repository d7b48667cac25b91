package dev.ripcord.prefill.scheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.Registration;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.SendSession;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.JobEvents;
import reactor.core.publisher.Flux;

/**
 * One prompt in the prefill worker: its state, its engine sequence, its transfer session and the event stream the
 * gateway reads. Fields other than the state and the cancel request are touched only by the engine loop thread.
 */
public final class PrefillJob {

    /**
     * The life of a prefill job.
     *
     * <pre>
     *  from \ to   QUEUED  RUNNING  DONE  CANCELLED  FAILED
     *  (new)         ✓
     *  QUEUED                ✓                ✓         ✓
     *  RUNNING                        ✓       ✓         ✓
     *  DONE, CANCELLED, FAILED: terminal
     * </pre>
     */
    public enum State {
        QUEUED, RUNNING, DONE, CANCELLED, FAILED;

        boolean isTerminal() {
            return this == DONE || this == CANCELLED || this == FAILED;
        }

        boolean canMoveTo(State next) {
            return switch (this) {
                case QUEUED -> next == RUNNING || next == CANCELLED || next == FAILED;
                case RUNNING -> next == DONE || next == CANCELLED || next == FAILED;
                case DONE, CANCELLED, FAILED -> false;
            };
        }
    }

    final String requestId;
    final int[] tokens;
    final ReceiveDescriptor descriptor;
    private final AtomicReference<State> state = new AtomicReference<>(State.QUEUED);
    private final JobCancel cancel = new JobCancel();
    final JobEvents<PrefillEvent> events = new JobEvents<>();
    volatile Registration registration;
    volatile CompletableFuture<SendSession> connecting;

    volatile dev.ripcord.engine.SamplingParams sampling;

    // Engine-loop state.
    Sequence sequence;
    /** Connected at admission (on the caller's thread), so decode's receive session is attached while queued. */
    volatile SendSession send;
    int tokensDone;
    int pagesSent;
    int chunks;
    final List<CompletableFuture<Void>> sends = new ArrayList<>();

    PrefillJob(String requestId, int[] tokens, ReceiveDescriptor descriptor) {
        this.requestId = requestId;
        this.tokens = tokens;
        this.descriptor = descriptor;
    }

    public String requestId() {
        return requestId;
    }

    public State state() {
        return state.get();
    }

    /** The events for the gateway: QUEUED, STARTED, CHUNK..., then DONE or ERROR, then completion. */
    public Flux<PrefillEvent> events() {
        return events.flux();
    }

    /** Performs a checked transition; false if another thread moved the job first (e.g. a cancel won). */
    boolean moveTo(State expected, State next) {
        if (!expected.canMoveTo(next)) {
            throw new IllegalStateException("prefill job " + requestId + ": illegal transition " + expected
                    + " -> " + next);
        }
        return state.compareAndSet(expected, next);
    }

    /** Records the first cancel; later ones are ignored. Returns whether this call recorded it. */
    boolean requestCancel(CancelReason reason, CancelSource source) {
        return cancel.request(reason, source);
    }

    JobCancel.Request cancelRequest() {
        return cancel.request();
    }

    boolean isCancelRequested() {
        return cancel.isRequested();
    }

    void emit(PrefillEvent event) {
        events.emit(event);
    }

    void end() {
        events.end();
    }

    @Override
    public String toString() {
        return "PrefillJob[" + requestId + " " + state.get() + " " + tokensDone + "/" + tokens.length + "]";
    }
}
