package dev.ripcord.worker;

import dev.ripcord.kv.SessionListener;
import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.Side;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecyclePublisher;

/**
 * The KV transfer sessions of a worker on its lifecycle log: opened ({@code KV_OPENED}), aborted ({@code ABORTING}:
 * {@code KV_ABORTED}), drained ({@code COMPLETED} or {@code ABORTED}, when nothing can still read or write the
 * session's memory: {@code KV_DRAINED}), released ({@code KV_RELEASED}, with the bytes moved). The detail says the
 * side ({@code SENDER} in prefill, {@code RECEIVER} in decode). Non-blocking, as {@link SessionListener} requires.
 * The worker's auto-configuration wires it ({@code TransferAgent.onSession}); in-process tests may too.
 */
public final class SessionLifecycle implements SessionListener {

    private final LifecyclePublisher publisher;

    public SessionLifecycle(LifecyclePublisher publisher) {
        this.publisher = publisher;
    }

    @Override
    public void onSession(String requestId, Side side, SessionState state, long bytes) {
        LifecycleEventType type = switch (state) {
            case OPEN -> LifecycleEventType.KV_OPENED;
            case ABORTING -> LifecycleEventType.KV_ABORTED;
            case COMPLETED, ABORTED -> LifecycleEventType.KV_DRAINED;
            case RELEASED -> LifecycleEventType.KV_RELEASED;
            case TRANSFERRING, COMPLETING -> null;
        };
        if (type == null) {
            return;
        }
        LifecycleEvent event = LifecycleEvent.of(type, requestId).withDetail(
                type == LifecycleEventType.KV_DRAINED ? side + " " + state : side.name());
        publisher.emit(type == LifecycleEventType.KV_RELEASED ? event.withBytes(bytes) : event);
    }
}
