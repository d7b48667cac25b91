package dev.ripcord.decode.scheduler;

import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.CancelSource;
import dev.ripcord.cancel.Registration;
import dev.ripcord.engine.Sequence;
import dev.ripcord.kv.ReceiveSession;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.worker.JobCancel;
import dev.ripcord.worker.JobEvents;
import reactor.core.publisher.Flux;

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

    final DecodeRequest request;
    private final AtomicReference<State> state = new AtomicReference<>(State.AWAITING_KV);
    private final JobCancel cancel = new JobCancel();
    final JobEvents<DecodeEvent> events = new JobEvents<>();
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
        return events.flux();
    }

    boolean moveTo(State expected, State next) {
        if (!expected.canMoveTo(next)) {
            throw new IllegalStateException("decode job " + requestId() + ": illegal transition " + expected
                    + " -> " + next);
        }
        return state.compareAndSet(expected, next);
    }

    boolean requestCancel(CancelReason reason, CancelSource source) {
        return cancel.request(reason, source);
    }

    JobCancel.Request cancelRequest() {
        return cancel.request();
    }

    /** True once per job: whichever path learns first that a cancel ended it counts the abort. */
    boolean claimAbortCount() {
        return cancel.claimAbortCount();
    }

    boolean isCancelRequested() {
        return cancel.isRequested();
    }

    void emit(DecodeEvent event) {
        events.emit(event);
    }

    void end() {
        events.end();
    }

    @Override
    public String toString() {
        return "DecodeJob[" + requestId() + " " + state.get() + " generated=" + generated + "]";
    }
}
