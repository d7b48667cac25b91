package dev.ripcord.kv;

import java.lang.foreign.MemorySegment;

/**
 * What a session ({@link SendSession}, {@link ReceiveSession}) needs from the agent that made it, and nothing
 * more: the agent's name, meters and lifecycle listener, the region registry, and the bookkeeping a release hands
 * back. Sessions never see the {@link TransferAgent} itself.
 */
interface SessionHost {

    /** Where a slice lies: in which region, at which offset. */
    record RegionSpan(KvRegion region, long offset) {
    }

    /** The agent's name, for logs and abort details. */
    String agentName();

    KvMetrics metrics();

    /** The agent's lifecycle listener now (it may be replaced while sessions live). */
    SessionListener sessionListener();

    /** True when {@code region} is registered with this agent. */
    boolean owns(KvRegion region);

    /** The registered region holding {@code slice}; {@link IllegalArgumentException} when none does. */
    RegionSpan regionContaining(MemorySegment slice);

    /** Polls {@code drain} until its session releases: its drain waits on a shared-memory writer. */
    void watchDrain(DrainWatchdog.Drain drain);

    /** The send session released: drop its registration and live-session figures. */
    void released(SendSession session, SessionState terminal, long abortStartNanos);

    /** The receive session released: drop its registration and live-session figures. */
    void released(ReceiveSession session, SessionState terminal, long abortStartNanos);
}
