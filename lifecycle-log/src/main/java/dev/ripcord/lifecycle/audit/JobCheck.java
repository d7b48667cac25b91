package dev.ripcord.lifecycle.audit;

import java.util.ArrayList;
import java.util.List;

/** An invariant judged one worker job at a time. */
abstract class JobCheck implements InvariantCheck {

    @Override
    public final List<Finding> check(History history) {
        List<Finding> found = new ArrayList<>();
        for (RequestHistory request : history.requests()) {
            for (Job job : request.jobs()) {
                check(request, job, found);
            }
        }
        return found;
    }

    /** Adds to {@code found} what {@code job} of {@code request} breaks. */
    abstract void check(RequestHistory request, Job job, List<Finding> found);
}
