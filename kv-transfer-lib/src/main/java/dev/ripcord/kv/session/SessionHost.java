package dev.ripcord.kv.session;

import dev.ripcord.kv.SessionListener;
import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.KvRegion;
import java.lang.foreign.MemorySegment;

/**
 * What a session ({@link DefaultSendSession}, {@link DefaultReceiveSession}) needs from the agent that made it, and nothing
 * more: the agent's name, meters and lifecycle listener, the region registry, and the bookkeeping a release hands
 * back. Sessions never see the agent itself.
 */
public interface SessionHost {

    /** Where a slice lies: in which region, at which offset. */
    record RegionSpan(DefaultKvRegion region, long offset) {
    }

    /** The agent's name, for logs and abort details. */
    String agentName();

    KvMetrics metrics();

    /** The agent's lifecycle listener now (it may be replaced while sessions live). */
    SessionListener sessionListener();

    /** {@code region} as this agent's own implementation, or null when it belongs to another agent. */
    DefaultKvRegion own(KvRegion region);

    /** The registered region holding {@code slice}; {@link IllegalArgumentException} when none does. */
    RegionSpan regionContaining(MemorySegment slice);

    /** Polls {@code drain} until its session releases: its drain waits on a shared-memory writer. */
    void watchDrain(DrainWatchdog.Drain drain);

    /** The send session released: drop its registration and live-session figures. */
    void released(DefaultSendSession session, SessionState terminal, long abortStartNanos);

    /** The receive session released: drop its registration and live-session figures. */
    void released(DefaultReceiveSession session, SessionState terminal, long abortStartNanos);
}
