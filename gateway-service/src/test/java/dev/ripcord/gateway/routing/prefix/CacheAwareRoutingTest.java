package dev.ripcord.gateway.routing.prefix;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.Affinity;
import dev.ripcord.gateway.routing.RoutingPolicy;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixCacheEvent.Kind;
import dev.ripcord.protocol.prefix.PrefixKeys;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Which prefill worker a prompt goes to under each policy, given the index and the legs in flight. */
class CacheAwareRoutingTest {

    static final String MODEL = "stories15M@abc";
    static final int PAGE = 16;
    static final int[] SYSTEM = IntStream.range(0, 4 * PAGE).map(i -> 100 + i).toArray(); // four pages
    static final URI A = URI.create("http://10.0.0.1:8081");
    static final URI B = URI.create("http://10.0.0.2:8081");
    static final URI C = URI.create("http://10.0.0.3:8081");

    private final PrefixIndex index = new PrefixIndex();

    private WorkerPool pool(RoutingPolicy policy) {
        WorkerPool pool = new WorkerPool("prefill", new WorkerResilience(ResilienceProperties.defaults()), policy);
        pool.update(List.of(A, B, C));
        return pool;
    }

    /** {@code worker} holds the first {@code pages} pages of {@code tokens} (under {@code salt}). */
    private void holds(URI worker, int[] tokens, int pages, String salt) {
        String id = worker.getAuthority();
        long[] keys = PrefixKeys.keys(PrefixKeys.seed(MODEL, PAGE, salt), PAGE, tokens);
        index.apply(new PrefixCacheEvent(id, 1, 1, Kind.CLEARED, PAGE, null));
        index.apply(new PrefixCacheEvent(id, 1, 2, Kind.STORED, PAGE, java.util.Arrays.copyOf(keys, pages)));
    }

    private static int[] prompt(int userTokens) {
        int[] p = java.util.Arrays.copyOf(SYSTEM, SYSTEM.length + userTokens);
        for (int i = SYSTEM.length; i < p.length; i++) {
            p[i] = 7 + i;
        }
        return p;
    }

    private static URI chosen(WorkerPool pool, Affinity affinity) {
        try (WorkerPool.Lease lease = pool.acquire(List.of(), List.of(), affinity)) {
            return lease.instance().uri();
        }
    }

    @Test
    void thePromptGoesToTheWorkerWithTheLongestCachedPrefix() {
        holds(A, SYSTEM, 1, null);
        holds(B, SYSTEM, 4, null);
        holds(C, SYSTEM, 2, null);
        PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
        WorkerPool pool = pool(RoutingPolicy.CACHE_AWARE);
        for (int i = 0; i < 6; i++) {
            assertThat(chosen(pool, routing.affinity(prompt(20 + i), null))).isEqualTo(B);
        }
    }

    @Test
    void loadOutweighsTheCacheByTheOverlapWeight() {
        holds(B, SYSTEM, 4, null);
        WorkerPool pool = pool(RoutingPolicy.CACHE_AWARE);
        List<WorkerPool.Lease> busy = new ArrayList<>();
        for (int i = 0; i < 3; i++) { // three legs in flight on B
            busy.add(pool.acquire(List.of(), List.of(pool.instances().get(0), pool.instances().get(2))));
        }
        assertThat(pool.instances().get(1).outstanding()).isEqualTo(3);
        // Weight 1: four cached pages beat three legs in flight.
        assertThat(chosen(pool, new PrefixRouting(index, MODEL, 1.0).affinity(prompt(5), null))).isEqualTo(B);
        // Weight 0.5: two pages' worth against three legs: an idle worker wins.
        assertThat(chosen(pool, new PrefixRouting(index, MODEL, 0.5).affinity(prompt(5), null))).isNotEqualTo(B);
        busy.forEach(WorkerPool.Lease::close);
    }

    @Test
    void anotherCacheSaltSharesNothing() {
        holds(B, SYSTEM, 4, "tenant-1");
        PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
        WorkerPool pool = pool(RoutingPolicy.CACHE_AWARE);
        assertThat(chosen(pool, routing.affinity(prompt(3), "tenant-1"))).isEqualTo(B);
        List<URI> unsalted = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            unsalted.add(chosen(pool, routing.affinity(prompt(3), null)));
        }
        assertThat(unsalted).as("no cached prefix: load and turn alone").containsExactlyInAnyOrder(A, B, C);
    }

    @Test
    void withAnEmptyIndexOrRoundRobinTheCacheIsNotLookedAt() {
        PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
        assertThat(routing.affinity(prompt(3), null)).as("empty index: no affinity").isSameAs(Affinity.NONE);
        holds(B, SYSTEM, 4, null);
        WorkerPool roundRobin = pool(RoutingPolicy.ROUND_ROBIN);
        List<URI> turns = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            turns.add(chosen(roundRobin, routing.affinity(prompt(3), null)));
        }
        assertThat(turns).containsExactly(A, B, C, A, B, C);
        WorkerPool leastLoaded = pool(RoutingPolicy.LEAST_LOADED);
        List<URI> loaded = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            loaded.add(chosen(leastLoaded, routing.affinity(prompt(3), null)));
        }
        assertThat(loaded).containsExactlyInAnyOrder(A, B, C);
    }

    @Test
    void anUntrustedWorkerCountsAsHoldingNothing() {
        holds(B, SYSTEM, 4, null);
        index.apply(new PrefixCacheEvent(B.getAuthority(), 1, 9, Kind.STORED, PAGE, new long[] {1})); // gap
        PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
        WorkerPool pool = pool(RoutingPolicy.CACHE_AWARE);
        List<URI> chosen = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            chosen.add(chosen(pool, routing.affinity(prompt(3), null)));
        }
        assertThat(chosen).containsExactlyInAnyOrder(A, B, C);
    }
}
