package dev.ripcord.gateway.routing;

/**
 * What one request gains from each instance beyond its load: under {@link RoutingPolicy#CACHE_AWARE}, an instance's
 * score is its affinity minus its legs in flight. Prefill's is the weighted count of the prompt's pages the instance
 * holds cached. Called on the routing thread: it must not block.
 */
@FunctionalInterface
public interface Affinity {

    /** The instance's gain, in legs in flight it is worth; 0 for none. */
    double of(WorkerInstance instance);

    /** No preference: routing by load alone. */
    Affinity NONE = instance -> 0;
}
