package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

/**
 * Whether a window holds evidence to judge at all. An audit of nothing must not pass: no events (the log is off, the
 * range is wrong), requests but no worker event about any of them (the workers' log is off or lost), or requests all
 * in flight (none was judged for what it misses) is an error.
 */
final class Coverage {

    private Coverage() {
    }

    static List<String> errors(History history) {
        List<String> errors = new ArrayList<>();
        if (history.log().isEmpty()) {
            errors.add("the window holds no lifecycle event: nothing was audited (is the lifecycle log off, or the "
                    + "range wrong?)");
            return errors;
        }
        List<RequestHistory> requests = history.requests();
        if (!requests.isEmpty() && requests.stream().allMatch(r -> r.jobs().isEmpty())) {
            errors.add(("%d request(s) but no worker event about any of them: the workers' lifecycle log is off or "
                    + "was lost").formatted(requests.size()));
        }
        if (!requests.isEmpty() && requests.stream().allMatch(RequestHistory::partial)) {
            errors.add(("all %d request(s) run into an edge of the range or the in-flight grace: none was judged for "
                    + "the events it misses; widen the range or lower --in-flight-grace").formatted(requests.size()));
        }
        return errors;
    }
}
