package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

/**
 * Stops the work of one request. Called by the {@link CancellationRegistry} at most once per registration, outside
 * any registry lock, on the thread that delivered the winning signal: the Kafka consumer thread, a Netty event loop,
 * a timer. So it must be quick and must not block: dispose a subscription, complete a sink, set a flag that the
 * compute loop checks. It may call back into the registry (even {@link Registration#complete()} on its own
 * registration). An exception it throws is logged and counted; the request still counts as aborted.
 */
@FunctionalInterface
public interface AbortHandler {

    void onAbort(String requestId, CancelReason reason, CancelSource source);
}
