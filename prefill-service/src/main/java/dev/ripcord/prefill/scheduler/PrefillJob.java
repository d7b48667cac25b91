package dev.ripcord.prefill.scheduler;

import java.time.Duration;
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
import dev.ripcord.worker.EngineLoop;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

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

    /** Why and from where a cancel reached this job; recorded once. */
    record CancelRequest(CancelReason reason, CancelSource source, long observedNanos) {
    }

    private static final Sinks.EmitFailureHandler RETRY = Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1));

    final String requestId;
    final int[] tokens;
    final ReceiveDescriptor descriptor;
    private final AtomicReference<State> state = new AtomicReference<>(State.QUEUED);
    private final AtomicReference<CancelRequest> cancel = new AtomicReference<>();
    private final Sinks.Many<PrefillEvent> events = Sinks.many().unicast().onBackpressureBuffer();
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
        return events.asFlux();
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
        return cancel.compareAndSet(null, new CancelRequest(reason, source, System.nanoTime()));
    }

    CancelRequest cancelRequest() {
        return cancel.get();
    }

    boolean isCancelRequested() {
        return cancel.get() != null;
    }

    /** Where every emission of this job's events runs: the engine loop, so that the sink has one emitter. */
    volatile EngineLoop emitter;

    void emit(PrefillEvent event) {
        emitter.runInLoop(() -> events.emitNext(event, RETRY));
    }

    void end() {
        emitter.runInLoop(() -> events.emitComplete(RETRY));
    }

    @Override
    public String toString() {
        return "PrefillJob[" + requestId + " " + state.get() + " " + tokensDone + "/" + tokens.length + "]";
    }
}
