package dev.ripcord.lifecycle.audit;

import java.util.List;
import java.util.Set;

/**
 * When the log itself explains a missing event, which makes it unverifiable rather than a violation. Only two things
 * do, and only for the process that should have logged it:
 * <ul>
 *   <li>that process lost events (a DROPPED marker, or a sequence gap: its heartbeats make a lost tail one) after the
 *       job's first event, so that the missing event may be among them; a loss before the job, on another process of
 *       the same instance (before a restart) or on another instance excuses nothing;</li>
 *   <li>that process died (no STOPPED marker, and a later process of the same instance) with the job still missing
 *       the event: what a process had open when it died was never logged.</li>
 * </ul>
 * A missing event whose process is unknown (a request whose gateway ADMITTED is not in the log, a worker that logged
 * nothing) has no excuse.
 */
final class Excuses {

    private final List<EventLoss> losses;
    private final Set<String> crashed;

    Excuses(History history) {
        losses = history.losses();
        crashed = history.crashed();
    }

    /** Why {@code finding} (a missing event) cannot be judged, as a suffix for its message, or null when it can. */
    String excuse(Finding finding) {
        if (finding.process() == null) {
            return null;
        }
        if (crashed.contains(finding.process())) {
            return " (unverifiable: the process ended without a clean stop and was restarted; what it had open when "
                    + "it died was never logged)";
        }
        return losses.stream()
                .filter(l -> l.process().equals(finding.process()) && l.toSeq() > finding.afterSeq())
                .findFirst()
                .map(l -> " (unverifiable: the process lost events seq %d..%d, after this job's first event, seq %d)"
                        .formatted(l.fromSeq(), l.toSeq(), finding.afterSeq()))
                .orElse(null);
    }
}
