package dev.ripcord.gateway.routing;

/**
 * How a {@link WorkerPool} orders the instances it may route a leg to ({@code ripcord.gateway.routing.policy}); in
 * every policy an instance already tried for the leg comes last, and ties go to the instance after the last one
 * chosen.
 *
 * <ul>
 *   <li>{@link #CACHE_AWARE}: the highest {@code weight × cached prefix pages − legs in flight}, where the cached
 *       prefix is what the request's {@link Affinity} says (prefill: the pages of its prompt the instance holds in
 *       its prefix cache). Without an affinity, or with every instance at 0, it is {@link #LEAST_LOADED}.</li>
 *   <li>{@link #LEAST_LOADED}: the fewest legs in flight; the cache is not looked at.</li>
 *   <li>{@link #ROUND_ROBIN}: each instance in turn, whatever its load or cache (a baseline to compare against).</li>
 * </ul>
 */
public enum RoutingPolicy {
    CACHE_AWARE, LEAST_LOADED, ROUND_ROBIN
}
