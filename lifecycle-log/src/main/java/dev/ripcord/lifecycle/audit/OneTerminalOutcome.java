package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;

/** {@link Invariant#ONE_TERMINAL_OUTCOME}: every request reaches exactly one gateway FINISHED. */
final class OneTerminalOutcome implements InvariantCheck {

    @Override
    public List<Finding> check(History history) {
        List<Finding> found = new ArrayList<>();
        for (RequestHistory r : history.requests()) {
            List<LifecycleEvent> finished = r.gateway(LifecycleEventType.FINISHED);
            if (finished.size() > 1) {
                found.add(Finding.broken(r.requestId(), Invariant.ONE_TERMINAL_OUTCOME,
                        "the request reached %d terminal outcomes".formatted(finished.size()) + r.note(), finished));
            } else if (finished.isEmpty() && !r.partial()) {
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
