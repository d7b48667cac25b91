package dev.ripcord.lifecycle.audit;

import java.util.HashSet;
import java.util.Set;

/**
 * Why the log itself may explain a missing event: the instance lost events, or the process died. A missing event a
 * loss or a crash explains is unverifiable, not a violation.
 */
final class Excuses {

    private final Set<String> lossyInstances = new HashSet<>();
    private final boolean gatewayLossy;
    private final Set<String> crashed;

    Excuses(History history) {
        history.losses().forEach(l -> lossyInstances.add(l.instance()));
        gatewayLossy = history.losses().stream().anyMatch(l -> History.GATEWAY.equals(l.service()));
        crashed = history.crashed();
    }

    /** Why {@code finding} (a missing event) cannot be judged, as a suffix for its message, or null when it can. */
    String excuse(Finding finding) {
        boolean lost = finding.instance() == null ? gatewayLossy : lossyInstances.contains(finding.instance());
        boolean died = finding.process() != null && crashed.contains(finding.process());
        if (died) {
            return " (unverifiable: the process ended without a clean stop and was restarted; what it had open when "
                    + "it died was never logged)";
        }
        return lost ? " (unverifiable: the instance lost events)" : null;
    }
}
