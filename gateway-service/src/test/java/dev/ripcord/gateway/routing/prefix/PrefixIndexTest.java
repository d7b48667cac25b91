package dev.ripcord.gateway.routing.prefix;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.RoutingPolicy;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixCacheEvent.Kind;
import org.junit.jupiter.api.Test;

import static dev.ripcord.gateway.routing.prefix.PrefixIndex.Outcome.APPLIED;
import static dev.ripcord.gateway.routing.prefix.PrefixIndex.Outcome.DUPLICATE;
import static dev.ripcord.gateway.routing.prefix.PrefixIndex.Outcome.GAP;
import static dev.ripcord.gateway.routing.prefix.PrefixIndex.Outcome.STALE;
import static dev.ripcord.gateway.routing.prefix.PrefixIndex.Outcome.UNTRUSTED;
import static org.assertj.core.api.Assertions.assertThat;

class PrefixIndexTest {

    private static final String W = "10.0.0.7:8081";
    private static final long[] PROMPT = {11, 12, 13, 14};

    private final PrefixIndex index = new PrefixIndex();

    private static PrefixCacheEvent event(long generation, long seq, Kind kind, long... keys) {
        return new PrefixCacheEvent(W, generation, seq, kind, 64, keys);
    }

    @Test
    void storedAndRemovedPagesGiveTheLongestHeldPrefix() {
        assertThat(index.apply(event(1, 1, Kind.CLEARED))).isEqualTo(APPLIED);
        assertThat(index.apply(event(1, 2, Kind.STORED, 11, 12, 13))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(3);
        assertThat(index.apply(event(1, 3, Kind.REMOVED, 12))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).as("a prefix stops at the first page not held").isEqualTo(1);
        assertThat(index.pageTokens(W)).isEqualTo(64);
        assertThat(index.cachedPages("10.0.0.8:8081", PROMPT)).as("an unknown worker holds nothing").isZero();
        assertThat(index.cachedPages("10.0.0.7:8081".toUpperCase(), PROMPT)).isEqualTo(1);
    }

    @Test
    void aRestartedWorkersNewGenerationDropsItsOldPages() {
        index.apply(event(1, 1, Kind.CLEARED));
        index.apply(event(1, 2, Kind.STORED, 11, 12));
        // The worker restarted: its sequence starts again at 1, under a new generation.
        assertThat(index.apply(event(2, 1, Kind.CLEARED))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).isZero();
        assertThat(index.apply(event(2, 2, Kind.STORED, 11))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(1);
        assertThat(index.apply(event(1, 3, Kind.STORED, 11, 12, 13, 14)))
                .as("a straggler of the old generation").isEqualTo(STALE);
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(1);
    }

    @Test
    void aSequenceGapUntrustsTheWorkerUntilItsNextCleared() {
        index.apply(event(1, 1, Kind.CLEARED));
        index.apply(event(1, 2, Kind.STORED, 11, 12));
        assertThat(index.apply(event(1, 4, Kind.STORED, 13))).as("seq 3 was lost").isEqualTo(GAP);
        assertThat(index.trusted(W)).isFalse();
        assertThat(index.cachedPages(W, PROMPT)).as("nothing of an untrusted worker is routed by").isZero();
        assertThat(index.apply(event(1, 5, Kind.STORED, 11, 12, 13))).isEqualTo(UNTRUSTED);
        assertThat(index.cachedPages(W, PROMPT)).isZero();
        assertThat(index.untrustedWorkers()).isEqualTo(1);
        // The worker noticed its own loss (or an operator cleared it): a new generation, trusted again.
        assertThat(index.apply(event(7, 6, Kind.CLEARED))).isEqualTo(APPLIED);
        index.apply(event(7, 7, Kind.STORED, 11));
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(1);
        assertThat(index.untrustedWorkers()).isZero();
    }

    @Test
    void aNewGenerationWhoseClearedWasLostIsAGap() {
        index.apply(event(1, 1, Kind.CLEARED));
        index.apply(event(1, 2, Kind.STORED, 11));
        assertThat(index.apply(event(2, 2, Kind.STORED, 11, 12))).isEqualTo(GAP);
        assertThat(index.cachedPages(W, PROMPT)).isZero();
    }

    @Test
    void redeliveryInAnyAmountChangesNothing() {
        List<PrefixCacheEvent> log = List.of(event(1, 1, Kind.CLEARED), event(1, 2, Kind.STORED, 11, 12, 13),
                event(1, 3, Kind.REMOVED, 13), event(1, 4, Kind.STORED, 14), event(1, 5, Kind.REMOVED, 11));
        PrefixIndex once = new PrefixIndex();
        log.forEach(once::apply);
        Random random = new Random(42);
        for (int round = 0; round < 200; round++) {
            PrefixIndex redelivered = new PrefixIndex();
            for (int i = 0; i < log.size(); i++) {
                // each event delivered once in order, then some earlier ones again (at least once, never reordered
                // ahead of an event not yet delivered)
                assertThat(redelivered.apply(log.get(i))).isNotEqualTo(GAP);
                List<PrefixCacheEvent> again = new ArrayList<>(log.subList(0, i + 1));
                Collections.shuffle(again, random);
                for (PrefixCacheEvent e : again.subList(0, random.nextInt(again.size() + 1))) {
                    assertThat(redelivered.apply(e)).isIn(DUPLICATE, STALE);
                }
            }
            for (long[] prompt : new long[][] {{11, 12, 13}, {12}, {14}, {13}}) {
                assertThat(redelivered.cachedPages(W, prompt)).isEqualTo(once.cachedPages(W, prompt));
            }
            assertThat(redelivered.pages()).isEqualTo(once.pages()).isEqualTo(2);
        }
    }

    @Test
    void aWorkerFirstSeenMidGenerationIsAdoptedFromThere() {
        // The topic's retention deleted the head of the log, CLEARED included.
        assertThat(index.apply(event(3, 40, Kind.STORED, 11, 12))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(2);
        assertThat(index.apply(event(3, 41, Kind.REMOVED, 12))).isEqualTo(APPLIED);
        assertThat(index.cachedPages(W, PROMPT)).isEqualTo(1);
    }

    @Test
    void aWorkerThatLeavesThePoolIsForgotten() {
        WorkerPool pool = new WorkerPool("prefill", new WorkerResilience(ResilienceProperties.defaults()),
                RoutingPolicy.CACHE_AWARE);
        pool.onLeave(instance -> index.forget(instance.authority()));
        pool.update(List.of(URI.create("http://10.0.0.7:8081"), URI.create("http://10.0.0.8:8081")));
        index.apply(event(1, 1, Kind.CLEARED));
        index.apply(event(1, 2, Kind.STORED, 11, 12));
        index.apply(new PrefixCacheEvent("10.0.0.8:8081", 5, 1, Kind.CLEARED, 64, null));
        index.apply(new PrefixCacheEvent("10.0.0.8:8081", 5, 2, Kind.STORED, 64, new long[] {11}));
        pool.update(List.of(URI.create("http://10.0.0.8:8081")));
        assertThat(index.cachedPages(W, PROMPT)).isZero();
        assertThat(index.workers()).isEqualTo(1);
        assertThat(index.cachedPages("10.0.0.8:8081", PROMPT)).isEqualTo(1);
    }
}
