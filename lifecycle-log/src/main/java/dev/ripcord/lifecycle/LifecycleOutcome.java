package dev.ripcord.lifecycle;

/** How a request (gateway {@link LifecycleEventType#FINISHED}) or a job ({@link LifecycleEventType#JOB_FINISHED}) ended. */
public enum LifecycleOutcome {
    /** The work was done and its result delivered. */
    COMPLETED,
    /** A cancel stopped it. */
    CANCELLED,
    /** It broke (a worker, a transfer, the engine), or a worker refused it. */
    FAILED
}
