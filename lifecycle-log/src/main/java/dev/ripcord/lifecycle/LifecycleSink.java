package dev.ripcord.lifecycle;

import java.time.Duration;

/**
 * Where a {@link LifecyclePublisher}'s thread delivers stamped events (Kafka in the services, a list in tests).
 * Called from that one thread only; may block (that is the point of the publisher's queue), should not throw.
 */
@FunctionalInterface
public interface LifecycleSink extends AutoCloseable {

    void send(LifecycleEvent event);

    /**
     * Sends that failed after {@link #send} returned (a producer's callback reporting an error), since start: the
     * publisher counts them with its own ({@code ripcord.lifecycle.send.failures}). The default has none.
     */
    default long failed() {
        return 0;
    }

    @Override
    default void close() {
    }

    /**
     * Closes the sink, waiting at most {@code timeout} for what it still has in flight (a producer's unacknowledged
     * sends); what is not delivered by then is given up. The default has nothing in flight: {@link #close()}.
     */
    default void close(Duration timeout) {
        close();
    }
}
