package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.util.List;

/** Runs one {@link InvariantCheck} over a log built with {@link AuditLogs}, the whole log audited, nothing in flight. */
final class Checks {

    static final Auditor.Options WHOLE_LOG = new Auditor.Options(null, null, Duration.ZERO);

    private Checks() {
    }

    static List<Finding> run(InvariantCheck check, AuditLogs log) {
        return check.check(History.of(log.events(), List.of(), WHOLE_LOG));
    }
}
