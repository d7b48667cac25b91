package dev.ripcord.decode.scheduler;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.Registration;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.worker.EngineLoop;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * One request in the decode worker. Fields other than the state and the cancel request are touched only on the
 * engine loop thread.
 */
public final class DecodeJob {

    /**
     * The life of a decode job.
     *
     * <pre>
     *  from \ to     AWAITING_KV  DECODING  FINISHED  CANCELLED  FAILED
     *  (new)              ✓
     *  AWAITING_KV                    ✓                   ✓         ✓
     *  DECODING                                 ✓         ✓         ✓
     *  FINISHED, CANCELLED, FAILED: terminal
     * </pre>
     * A job's pages are freed only after it is terminal AND its receive session is RELEASED.
     */
    public enum State {
        AWAITING_KV, DECODING, FINISHED, CANCELLED, FAILED;

        boolean isTerminal() {
            return this == FINISHED || this == CANCELLED || this == FAILED;
        }

        boolean canMoveTo(State next) {
            return switch (this) {
                case AWAITING_KV -> next == DECODING || next == CANCELLED || next == FAILED;
                case DECODING -> next == FINISHED || next == CANCELLED || next == FAILED;
                case FINISHED, CANCELLED, FAILED -> false;
            };
        }
    }

    record CancelRequest(CancelReason reason, CancelSource source, long observedNanos) {
    }

    private static final Sinks.EmitFailureHandler RETRY = Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1));

    final DecodeRequest request;
    private final AtomicReference<State> state = new AtomicReference<>(State.AWAITING_KV);
    private final AtomicReference<CancelRequest> cancel = new AtomicReference<>();
    private final Sinks.Many<DecodeEvent> events = Sinks.many().unicast().onBackpressureBuffer();
    volatile Registration registration;
    volatile ReceiveSession session;

    // Engine-loop state.
    Sequence sequence;
    int committedPages;
    int generated;

    DecodeJob(DecodeRequest request) {
        this.request = request;
    }

    public String requestId() {
        return request.requestId();
    }

    public State state() {
        return state.get();
    }

    /** RESERVED, then TOKEN..., the last one with its finish reason; or ERROR. Then completion. */
    public Flux<DecodeEvent> events() {
        return events.asFlux();
    }

    boolean moveTo(State expected, State next) {
        if (!expected.canMoveTo(next)) {
            throw new IllegalStateException("decode job " + requestId() + ": illegal transition " + expected
                    + " -> " + next);
        }
        return state.compareAndSet(expected, next);
    }

    boolean requestCancel(CancelReason reason, CancelSource source) {
        return cancel.compareAndSet(null, new CancelRequest(reason, source, System.nanoTime()));
    }

    CancelRequest cancelRequest() {
        return cancel.get();
    }

    private final java.util.concurrent.atomic.AtomicBoolean abortCounted =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** True once per job: whichever path learns first that a cancel ended it counts the abort. */
    boolean claimAbortCount() {
        return abortCounted.compareAndSet(false, true);
    }

    boolean isCancelRequested() {
        return cancel.get() != null;
    }

    /** Where every emission of this job's events runs: the engine loop, so that the sink has one emitter. */
    volatile EngineLoop emitter;

    void emit(DecodeEvent event) {
        emitter.runInLoop(() -> events.emitNext(event, RETRY));
    }

    void end() {
        emitter.runInLoop(() -> events.emitComplete(RETRY));
    }

    @Override
    public String toString() {
        return "DecodeJob[" + requestId() + " " + state.get() + " generated=" + generated + "]";
    }
}
