package dev.ripcord.gateway.routing.prefix;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.ripcord.gateway.routing.Affinity;
import dev.ripcord.protocol.prefix.PrefixKeys;

/**
 * A prompt's {@link Affinity} for the prefill workers: {@code overlapWeight ×} the pages of its longest cached prefix
 * each worker holds, by the {@link PrefixIndex}. The prompt's page keys are computed once per page size (normally
 * one), from the served model's identity and the request's {@code cache_salt}, exactly as the worker computes them
 * ({@link PrefixKeys}). With nothing in the index, or no model identity (a gateway without a model), there is no
 * affinity and routing is by load alone; nothing here waits on Kafka.
 */
public final class PrefixRouting {

    private final PrefixIndex index;
    private final String modelIdentity;
    private final double overlapWeight;

    /**
     * @param modelIdentity the served model's identity ({@code Pairing.modelIdentity}), or null: no affinity
     * @param overlapWeight how many legs in flight one cached page is worth
     */
    public PrefixRouting(PrefixIndex index, String modelIdentity, double overlapWeight) {
        this.index = index;
        this.modelIdentity = modelIdentity;
        this.overlapWeight = overlapWeight;
    }

    public PrefixIndex index() {
        return index;
    }

    /** The affinity of {@code promptTokens} under {@code cacheSalt} (null: none). */
    public Affinity affinity(int[] promptTokens, String cacheSalt) {
        if (modelIdentity == null || overlapWeight == 0 || index.isEmpty()) {
            return Affinity.NONE;
        }
        Map<Integer, long[]> keysByPageTokens = new ConcurrentHashMap<>(2);
        return instance -> {
            String worker = instance.authority();
            int pageTokens = index.pageTokens(worker);
            if (pageTokens == 0) {
                return 0;
            }
            long[] keys = keysByPageTokens.computeIfAbsent(pageTokens, pt -> PrefixKeys.keys(
                    PrefixKeys.seed(modelIdentity, pt, cacheSalt), pt, promptTokens));
            return overlapWeight * index.cachedPages(worker, keys);
        };
    }
}
