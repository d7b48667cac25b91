package dev.ripcord.lifecycle;

/**
 * Where a {@link LifecyclePublisher}'s thread delivers stamped events (Kafka in the services, a list in tests).
 * Called from that one thread only; may block (that is the point of the publisher's queue), should not throw.
 */
@FunctionalInterface
public interface LifecycleSink extends AutoCloseable {

    void send(LifecycleEvent event);

    @Override
    default void close() {
    }
}
