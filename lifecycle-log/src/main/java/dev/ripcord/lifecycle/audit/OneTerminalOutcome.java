package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/**
 * {@link Invariant#ONE_TERMINAL_OUTCOME}: every request reaches exactly one gateway FINISHED, and the client was
 * written at most one terminal frame. The two are separate evidence: FINISHED comes from the close of the request's
 * context, which only one close can win; TERMINAL_FRAME from the HTTP writer, once per terminal frame it writes (a
 * request whose client left, or that was answered by the error handler, has none). A request of {@code n > 1}
 * choices is one request: one FINISHED, one terminal frame, under its own ID (the choices' IDs are its workers').
 */
final class OneTerminalOutcome implements InvariantCheck {

    @Override
    public List<Finding> check(History history) {
        List<Finding> found = new ArrayList<>();
        for (RequestHistory r : history.requests()) {
            List<LifecycleEvent> finished = r.gateway(LifecycleEventType.FINISHED);
            if (finished.size() > 1) {
                found.add(Finding.broken(r.requestId(), Invariant.ONE_TERMINAL_OUTCOME,
                        "the request reached %d terminal outcomes".formatted(finished.size()) + r.note(), finished));
            }
            List<LifecycleEvent> frames = r.gateway(LifecycleEventType.TERMINAL_FRAME);
            if (frames.size() > 1) {
                found.add(Finding.broken(r.requestId(), Invariant.ONE_TERMINAL_OUTCOME,
                        "the gateway wrote %d terminal frames to the client".formatted(frames.size()) + r.note(),
                        frames));
            }
            if (finished.isEmpty() && !r.partial()) {
                // A gateway that died with the request open never logged its end.
                LifecycleEvent admitted = r.gateway(LifecycleEventType.ADMITTED).stream().findFirst().orElse(null);
                found.add(Finding.missing(r.requestId(), Invariant.ONE_TERMINAL_OUTCOME,
                        "the request never reached a terminal outcome" + r.note(), r.tail(),
                        admitted == null ? null : admitted.instance(),
                        admitted == null ? null : History.process(admitted), admitted == null ? 0 : admitted.seq()));
            }
        }
        return found;
    }
}
