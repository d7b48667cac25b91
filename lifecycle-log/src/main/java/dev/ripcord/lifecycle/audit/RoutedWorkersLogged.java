package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;

/**
 * {@link Invariant#ROUTED_WORKERS_LOGGED}: a request the gateway answered as completed was computed by a worker of
 * every role its ROUTED events name (prefill, decode), so each of those roles logged a job for it. A worker with its
 * lifecycle log off, or whose events never arrived, fails this check instead of passing every other one unseen.
 * ROUTED names the worker by address, not by the instance ID its events carry, so the check is by role (the worker's
 * {@code service}), and only a crash or a loss of a process of that role excuses it. Requests that failed or were
 * cancelled may have been routed to a worker that never answered, and are not judged.
 */
final class RoutedWorkersLogged implements InvariantCheck {

    @Override
    public List<Finding> check(History history) {
        List<Finding> found = new ArrayList<>();
        for (RequestHistory r : history.requests()) {
            List<LifecycleEvent> finished = r.gateway(LifecycleEventType.FINISHED);
            if (r.partial() || finished.size() != 1 || finished.getFirst().outcome() != LifecycleOutcome.COMPLETED) {
                continue;
            }
            for (String role : roles(r.gateway(LifecycleEventType.ROUTED))) {
                if (r.jobs().stream().noneMatch(job -> role.equals(job.service()))) {
                    String suspect = suspect(history, role);
                    found.add(Finding.missing(r.requestId(), Invariant.ROUTED_WORKERS_LOGGED,
                            "the request completed, routed to %s, but no %s worker logged a job for it"
                                    .formatted(role, role) + r.note(), r.tail(), null, suspect, 0));
                }
            }
        }
        return found;
    }

    /**
     * A process of {@code role} that died or lost events in the range, or null. ROUTED names a worker by address,
     * not by its log's instance ID, so the job cannot be tied to one process: a crash or loss of any process of that
     * role is the only thing that may explain a job missing whole (the {@link Excuses} decide, as for any missing
     * event); with none, the absence is a violation.
     */
    private static String suspect(History history, String role) {
        return history.losses().stream().filter(l -> role.equals(l.service())).map(EventLoss::process)
                .findFirst()
                .or(() -> history.log().stream().filter(e -> role.equals(e.service()))
                        .map(History::process).filter(history.crashed()::contains).findFirst())
                .orElse(null);
    }

    private static Set<String> roles(List<LifecycleEvent> routed) {
        Set<String> roles = new LinkedHashSet<>();
        for (LifecycleEvent e : routed) {
            if (e.prefillInstance() != null) {
                roles.add("prefill");
            }
            if (e.decodeInstance() != null) {
                roles.add("decode");
            }
        }
        return roles;
    }
}
