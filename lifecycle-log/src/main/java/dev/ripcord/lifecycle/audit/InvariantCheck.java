package dev.ripcord.lifecycle.audit;

import java.util.List;

/**
 * One invariant of the lifecycle log, checked over a whole {@link History}: a pure function, no state between calls.
 * The {@link Auditor} runs each of {@link #ALL} and sorts what they find into violations and unverifiable items.
 */
interface InvariantCheck {

    /** The invariants the audit checks, each its own unit (and its own test). */
    List<InvariantCheck> ALL = List.of(new OneTerminalOutcome(), new AtMostOneAbort(), new NoAbortAfterFinish(),
            new NoChunkAfterCancel(), new NoTokenAfterCancel(), new KvSessionReleasedOnce(), new PagesFreed(),
            new RoutedWorkersLogged(), new CancelObservedOrFinished(), new CancelReceivedThenObserved(),
            new PageCachedWhenComplete(), new HitOnlyCachedPages(), new CacheReferencesDropped());

    List<Finding> check(History history);
}
